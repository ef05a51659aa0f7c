import { SIM_HEADERS, parsePrometheus, startTestGateway, type TestGateway } from '../helpers';
import { chat, readSse } from './helpers';

// A shared stream holds the admission slot its first request took until the stream itself ends:
// detached streams (lingering, reading their upstream) count against limits.maxStreams; a resume
// that takes a detached stream over reads on that slot.

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

describe('admission of a resume that takes its detached stream over', () => {
  let u: TestGateway;
  beforeAll(async () => {
    u = await startTestGateway({
      sim: { tokensPerSecond: 200, ttftMs: 1 },
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, limits: { maxStreamsPerClient: 1 } },
      routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 65536, lingerMs: 5000 } }],
    });
  });
  afterAll(() => u.close());
  const lastId = (r: { events: { lastEventId: string }[] }): string => r.events[r.events.length - 1]!.lastEventId;

  const alice = { authorization: 'Bearer alice' };
  const detached = async (): Promise<number> => parsePrometheus(await (await fetch(`${u.gateway.url}/metrics`)).text()).get('tidegate_resume_detached_streams') ?? 0;
  async function untilDetached(n: number): Promise<void> {
    const deadline = Date.now() + 5000;
    while ((await detached()) !== n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await detached()).toBe(n);
  }

  it('borrows the slot its detached stream holds, one resume at a time, and gives it back when it leaves', async () => {
    const first = await readSse(`${u.gateway.url}/v1/chat/completions`, { body: chat('sim-synthetic-200000'), headers: alice });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(2);
    first.drop();
    await untilDetached(1);
    // The detached stream holds alice's one slot: a new stream of hers is refused…
    const other = await readSse(`${u.gateway.url}/v1/chat/completions`, { body: chat('sim'), headers: alice });
    await other.ended;
    expect(other.status).toBe(429);
    // …but coming back to it is not: the resume reads on the stream's own slot.
    const back = await readSse(`${u.gateway.url}/v1/streams/${streamId}`, { headers: { ...alice, 'last-event-id': lastId(first) } });
    expect(back.status).toBe(200);
    await back.atLeast(2);
    expect(u.gateway.app.gateway.admission.streams).toBe(1);
    // A second reader of the same stream needs a slot of its own.
    const second = await readSse(`${u.gateway.url}/v1/streams/${streamId}`, { headers: { ...alice, 'last-event-id': lastId(first) } });
    await second.ended;
    expect(second.status).toBe(429);
    back.drop();
    await back.ended;
    await untilDetached(1);
    const again = await readSse(`${u.gateway.url}/v1/streams/${streamId}`, { headers: { ...alice, 'last-event-id': lastId(back) } });
    expect(again.status).toBe(200);
    await again.atLeast(1);
    expect(u.gateway.app.gateway.admission.streams).toBe(1);
    again.drop();
  }, 20_000);
});
