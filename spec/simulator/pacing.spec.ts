import * as http from 'node:http';
import { createSimulator, Simulator } from '../../src/simulator';
import { postRaw, until, nextEvent } from './helpers';

describe('simulator pacing', () => {
  let sim: Simulator | undefined;

  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('spreads tokens over time at tokensPerSecond instead of sending them at once', async () => {
    // 30 tokens at 100 tokens/s: at least 29 intervals of 10 ms between first and last token.
    sim = createSimulator({ tokensPerSecond: 100, ttftMs: 0 });
    const { url } = await sim.listen();
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] });
    const contentChunks = res.chunks.filter((c) => c.data.includes('"content":"') && !c.data.includes('"role"'));
    expect(contentChunks.length).toBeGreaterThan(10);
    const first = contentChunks[0].at;
    const last = res.chunks[res.chunks.length - 1].at;
    expect(last - first).toBeGreaterThanOrEqual(250);
  });

  it('holds the status line back for ttftMs', async () => {
    sim = createSimulator({ tokensPerSecond: Infinity, ttftMs: 200 });
    const { url } = await sim.listen();
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] });
    expect(res.chunks[0].at - res.startedAt).toBeGreaterThanOrEqual(190);
  });

  it('takes per-request rate and ttft from x-sim-tokens-per-second and x-sim-ttft-ms', async () => {
    sim = createSimulator({ tokensPerSecond: 1, ttftMs: 60_000 });
    const { url } = await sim.listen();
    const res = await postRaw(url, '/v1/messages', { model: 'sim-basic', max_tokens: 100, stream: true, messages: [] }, {
      'x-sim-tokens-per-second': 'Infinity',
      'x-sim-ttft-ms': '0',
    });
    expect(res.status).toBe(200);
    expect(res.body.toString('utf8')).toContain('message_stop');
  });

  it('rejects a malformed x-sim-tokens-per-second with 400', async () => {
    sim = createSimulator();
    const { url } = await sim.listen();
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim', stream: true, messages: [] }, { 'x-sim-tokens-per-second': '0' });
    expect(res.status).toBe(400);
  });
});

describe('simulator backpressure', () => {
  let sim: Simulator | undefined;
  let req: http.ClientRequest | undefined;

  afterEach(async () => {
    req?.destroy();
    await sim?.close();
    sim = undefined;
    req = undefined;
  });

  it('stops writing while the client does not read, and resumes on drain', async () => {
    sim = createSimulator({ tokensPerSecond: Infinity, ttftMs: 0 });
    const { url } = await sim.listen();
    let response: http.IncomingMessage | undefined;
    req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (r) => {
      response = r;
      r.pause();
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'sim-synthetic-200000', stream: true, messages: [] }));

    // Wait (bounded) until the simulator has hit backpressure.
    const s = sim;
    await until(() => (s.requests[0]?.drainWaits ?? 0) > 0, 2000);
    const record = sim.requests[0];
    expect(record.drainWaits).toBeGreaterThan(0);
    const stuckAt = record.bytesWritten;
    await new Promise((r) => setTimeout(r, 200));
    expect(sim.requests[0].bytesWritten).toBe(stuckAt);
    expect(sim.requests[0].tokensWritten).toBeLessThan(200_000);

    // Reading again lets it move on.
    response?.resume();
    await until(() => s.requests[0].bytesWritten > stuckAt, 2000);
    expect(sim.requests[0].bytesWritten).toBeGreaterThan(stuckAt);
  });

  it('counts a client that leaves while backpressured as aborted', async () => {
    sim = createSimulator({ tokensPerSecond: Infinity, ttftMs: 0 });
    const { url } = await sim.listen();
    req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (r) => r.pause());
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'sim-synthetic-200000', stream: true, messages: [] }));
    const s = sim;
    await until(() => (s.requests[0]?.drainWaits ?? 0) > 0, 2000);
    const aborted = nextEvent(s, 'request-aborted', 1000);
    req.destroy();
    expect((await aborted).outcome).toBe('aborted');
    expect(sim.stats).toMatchObject({ active: 0, aborted: 1 });
  });
});
