import net from 'node:net';
import { connectSse } from '../../src/client';
import type { SseEvent } from '../../src/sse';
import { SIM_HEADERS, startTestGateway, type TestGateway } from '../gateway/helpers';
import { chatText, readSse, seqs } from '../gateway/resume/helpers';

// connectSse with resumeTidegateStream: a POST-started stream whose connection drops is resumed
// through GET /v1/streams/{id} with Last-Event-ID, not sent to the model again.

let t: TestGateway;
let proxy: net.Server;
let proxyUrl: string;
/** Response bytes after which the proxy cuts the first connection. */
const CUT_AFTER_BYTES = 3000;
let connections = 0;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 300, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders: ['content-type', ...SIM_HEADERS], resume: { lingerMs: 5000 } },
      { path: '/direct/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai' },
    ],
  });
  // A TCP proxy that drops the first connection mid-answer, as a flaky network would.
  proxy = net.createServer((client) => {
    const n = ++connections;
    const upstream = net.connect(t.gateway.port, '127.0.0.1');
    let down = 0;
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      down += chunk.length;
      client.write(chunk);
      if (n === 1 && down > CUT_AFTER_BYTES) {
        client.destroy();
        upstream.destroy();
      }
    });
    upstream.on('end', () => client.end());
    for (const s of [client, upstream]) s.on('error', () => (client.destroy(), upstream.destroy()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
  await t.close();
});

function collect(url: string, resume: boolean): Promise<{ events: SseEvent[]; streamIds: string[] }> {
  const events: SseEvent[] = [];
  const streamIds: string[] = [];
  return new Promise((resolve, reject) => {
    connectSse(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'sim-long', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      isTerminal: (e) => e.data === '[DONE]',
      initialDelayMs: 10,
      maxAttempts: 3,
      resumeTidegateStream: resume,
      onOpen: (r) => streamIds.push(r.headers.get('x-tidegate-stream-id') ?? ''),
    }).subscribe({ next: (e) => events.push(e), error: reject, complete: () => resolve({ events, streamIds }) });
  });
}

describe('connectSse resumeTidegateStream', () => {
  it('resumes a dropped POST-started stream through /v1/streams/{id}: the whole answer once, no new model request', async () => {
    const direct = await readSse(`${t.gateway.url}/direct/v1/chat/completions`, { body: { model: 'sim-long', stream: true, messages: [] } });
    await direct.ended;
    connections = 0;
    const modelRequests = t.sim.stats.requests;
    const { events, streamIds } = await collect(`${proxyUrl}/v1/chat/completions`, true);
    expect(connections).toBe(2);
    expect(t.sim.stats.requests).toBe(modelRequests + 1);
    expect(streamIds).toHaveLength(2);
    expect(streamIds[1]).toBe(streamIds[0]);
    expect(seqs(events, streamIds[0]!)).toEqual(events.map((_, i) => i + 1));
    expect(chatText(events)).toBe(chatText(direct.events));
    const resumes = t.logs.lines.filter((l) => l.message === 'resume' && l.streamId === streamIds[0]);
    expect(resumes).toHaveLength(1);
    expect(resumes[0]).toMatchObject({ outcome: 'completed' });
  });
});
