import { SIM_HEADERS, startTestGateway, type TestGateway } from '../helpers';
import { chat, readSse } from './helpers';

// A shared stream holds the admission slot its first request took until the stream itself ends:
// detached streams (lingering, reading their upstream) count against limits.maxStreams.

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 200, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, limits: { maxStreams: 3 } },
    routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 4096, lingerMs: 600 } }],
  });
});
afterAll(() => t.close());

describe('admission of resumable streams', () => {
  it('refuses a client that drops repeatedly once its detached streams fill maxStreams, and admits again once they were cancelled', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000') });
      expect(r.status).toBe(200);
      await r.atLeast(1);
      r.drop();
      await r.ended;
    }
    // Three detached streams hold their slots though no client reads them.
    await new Promise((r) => setTimeout(r, 50));
    expect(t.gateway.app.gateway.admission.streams).toBe(3);
    const refused = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000') });
    await refused.ended;
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_OVER_CAPACITY' } });
    // Each slot comes back when its stream is cancelled after lingerMs.
    const deadline = Date.now() + 5000;
    while (t.gateway.app.gateway.admission.streams > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(t.gateway.app.gateway.admission.streams).toBe(0);
    const again = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim') });
    expect(again.status).toBe(200);
    await again.ended;
  });
});
