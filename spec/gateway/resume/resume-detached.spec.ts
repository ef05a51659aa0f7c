import http from 'node:http';
import { SIM_HEADERS, parsePrometheus, startTestGateway, type TestGateway } from '../helpers';
import { chat, readSse, until } from './helpers';

// A detached resumable stream reads its upstream only into its window, then pauses it (TCP pushes
// back on the model), and cancels it when no reader came back within lingerMs.

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 400, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, debug: { streams: true } },
    routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 2048, lingerMs: 2500 } }],
  });
});
afterAll(() => t.close());

describe('a detached resumable stream', () => {
  it('pauses the upstream of a detached stream once its window is full, then cancels it after lingerMs', async () => {
    const first = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000'), headers: { 'x-sim-tokens-per-second': 'Infinity' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(2);
    first.drop();
    const record = (): (typeof t.sim.requests)[number] => t.sim.requests.find((r) => r.model === 'sim-synthetic-200000' && r.outcome === 'active')!;
    await until(() => record() !== undefined && record().drainWaits > 0, 3000, 'the simulator waiting on drain');
    const stuckAt = record().bytesWritten;
    await new Promise((r) => setTimeout(r, 150));
    expect(record().bytesWritten).toBe(stuckAt);
    const metrics = parsePrometheus(await (await fetch(`${t.gateway.url}/metrics`)).text());
    expect(metrics.get('tidegate_resume_detached_streams')).toBe(1);
    // The log holds the window, and at most the prefetch (16 events of < 512 bytes) the client had asked for and not taken.
    expect(metrics.get('tidegate_resume_log_bytes')).toBeLessThanOrEqual(2048 + 16 * 512);
    // /debug/streams lists it among the detached streams (it has no client, so no bridge).
    const debug = (await (await fetch(`${t.gateway.url}/debug/streams`)).json()) as { streams: { streamId: string }[]; detached: { streamId: string; route: string; logBytes: number; lastSeq: number }[] };
    expect(debug.streams.map((s) => s.streamId)).not.toContain(streamId);
    expect(debug.detached).toEqual([{ streamId, route: '/v1/chat/completions', logBytes: metrics.get('tidegate_resume_log_bytes'), lastSeq: expect.any(Number) }]);
    expect(debug.detached[0]!.lastSeq).toBeGreaterThanOrEqual(first.events.length);
    const detachedAt = Date.now();
    await new Promise((resolve) => t.sim.once('request-aborted', resolve));
    // Cancelled by the linger, not before.
    expect(Date.now() - detachedAt).toBeGreaterThan(500);
    const gone = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=1`);
    await gone.ended;
    expect(gone.status).toBe(404);
  });

  it('while its client is connected and not reading, pauses the upstream as a stream without resume does', async () => {
    let res: http.IncomingMessage | undefined;
    const req = http.request(`${t.gateway.url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-sim-tokens-per-second': 'Infinity' } }, (r) => {
      res = r;
      r.pause();
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify(chat('sim-synthetic-200000')));
    await until(() => res !== undefined, 3000, 'the response');
    const record = (): (typeof t.sim.requests)[number] | undefined => t.sim.requests.find((r) => r.model === 'sim-synthetic-200000' && r.outcome === 'active');
    await until(() => (record()?.drainWaits ?? 0) > 0, 3000, 'the simulator waiting on drain');
    const stuckAt = record()!.bytesWritten;
    await new Promise((r) => setTimeout(r, 300));
    expect(record()!.bytesWritten).toBe(stuckAt);
    expect(record()!.tokensWritten).toBeLessThan(200_000);
    const metrics = parsePrometheus(await (await fetch(`${t.gateway.url}/metrics`)).text());
    // Attached: the log holds what the client asked for, not a read-ahead.
    expect(metrics.get('tidegate_resume_detached_streams')).toBe(0);
    expect(metrics.get('tidegate_resume_log_bytes')).toBeLessThanOrEqual(2048 + 16 * 512 + 64 * 1024);
    req.destroy();
  });
});
