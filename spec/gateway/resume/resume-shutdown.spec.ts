import { SIM_HEADERS, startTestGateway, type TestGateway } from '../helpers';
import { chat, readSse } from './helpers';

// A graceful shutdown does not wait for detached streams: nobody reads what they produce.

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 200, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 4096, lingerMs: 30_000 } }],
  });
});
afterAll(() => t.close());

describe('shutdown with detached resumable streams', () => {
  it('cancels a detached stream at once instead of waiting the grace period', async () => {
    const first = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000') });
    expect(first.status).toBe(200);
    await first.atLeast(1);
    first.drop();
    await first.ended;
    await new Promise((r) => setTimeout(r, 100));
    expect(t.gateway.app.gateway.activeStreams).toBe(1);
    const aborted = new Promise((resolve) => t.sim.once('request-aborted', resolve));
    const started = Date.now();
    await t.gateway.shutdown(10_000);
    expect(Date.now() - started).toBeLessThan(3000);
    await aborted;
    expect(t.gateway.app.gateway.activeStreams).toBe(0);
  }, 20_000);

  it('cancels at once a stream whose last reader leaves during the drain', async () => {
    const u = await startTestGateway({
      sim: { tokensPerSecond: 200, ttftMs: 1 },
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
      routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 4096, lingerMs: 30_000 } }],
    });
    try {
      const reader = await readSse(`${u.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000') });
      await reader.atLeast(1);
      const started = Date.now();
      const stopped = u.gateway.shutdown(10_000);
      await new Promise((r) => setTimeout(r, 200));
      reader.drop();
      await stopped;
      expect(Date.now() - started).toBeLessThan(3000);
      expect(u.gateway.app.gateway.activeStreams).toBe(0);
    } finally {
      await u.close();
    }
  }, 20_000);
});
