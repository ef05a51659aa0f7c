import { SIM_HEADERS, parsePrometheus, startTestGateway, type TestGateway } from '../helpers';
import { chat, chatText, readSse, seqs } from './helpers';

// Resumable streams on the memory store, over real sockets: a client drops and comes back with
// Last-Event-ID; the window, the linger, a second reader and the credential check.

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 400, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders },
      { path: '/resume/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { lingerMs: 2000 } },
      { path: '/resume/v1/messages', upstreamPath: '/v1/messages', provider: 'anthropic', forwardHeaders: [...forwardHeaders, 'anthropic-version'], resume: true },
      { path: '/small/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 2048, lingerMs: 600 } },
    ],
  });
});
afterAll(() => t.close());

describe('resume (memory store)', () => {
  it('gives a client that dropped after k events the rest after its Last-Event-ID: no duplicate, no gap, the direct text', async () => {
    const direct = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat('sim-long') });
    await direct.ended;
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat('sim-long') });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    expect(streamId).toMatch(/^[0-9a-f]{32}$/);
    await first.atLeast(7);
    first.drop();
    await first.ended;
    const had = [...first.events];
    const last = had[had.length - 1]!.lastEventId;

    const rest = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': last } });
    expect(rest.status).toBe(200);
    expect(rest.headers['x-tidegate-stream-id']).toBe(streamId);
    await rest.ended;
    const all = [...had, ...rest.events];
    const numbers = seqs(all, streamId);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));
    expect(rest.events[rest.events.length - 1]!.data).toBe('[DONE]');
    expect(chatText(all)).toBe(chatText(direct.events));
    expect(chatText(all).length).toBeGreaterThan(100);
  });

  it('resumes from ?after=<seq> as from Last-Event-ID', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat() });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const again = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=3`);
    await again.ended;
    expect(seqs(again.events, streamId)[0]).toBe(4);
    expect(again.events.map((e) => e.data)).toEqual(first.events.slice(3).map((e) => e.data));
  });

  it('refuses a resume from before the window with 410 ERR_TIDEGATE_RESUME_GAP in the route error shape', async () => {
    const first = await readSse(`${t.gateway.url}/small/v1/chat/completions`, { body: chat('sim-long') });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const late = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': `${streamId}:1` } });
    await late.ended;
    expect(late.status).toBe(410);
    expect(JSON.parse(late.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_RESUME_GAP' } });
    // The tail of the window still resumes.
    const n = first.events.length;
    const tail = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': `${streamId}:${n - 2}` } });
    await tail.ended;
    expect(tail.status).toBe(200);
    expect(tail.events.map((e) => e.data)).toEqual(first.events.slice(n - 2).map((e) => e.data));
    const metrics = parsePrometheus(await (await fetch(`${t.gateway.url}/metrics`)).text());
    expect(metrics.get('tidegate_resume_gap_refusals_total{route="/small/v1/chat/completions"}')).toBeGreaterThanOrEqual(1);
  });

  it('answers 404 for an unknown stream', async () => {
    const r = await readSse(`${t.gateway.url}/v1/streams/${'0'.repeat(32)}`);
    await r.ended;
    expect(r.status).toBe(404);
    // OpenAI's shape, as every other path under /v1/ (an SDK reads its type and message)...
    expect(JSON.parse(r.body)).toEqual({ error: { code: 'ERR_TIDEGATE_STREAM_NOT_FOUND', message: expect.any(String), type: expect.any(String), param: null } });
    // ...and Anthropic's for an Anthropic SDK's request.
    const anthropic = await readSse(`${t.gateway.url}/v1/streams/${'0'.repeat(32)}`, { headers: { 'anthropic-version': '2023-06-01' } });
    await anthropic.ended;
    expect(anthropic.status).toBe(404);
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'not_found_error', message: expect.any(String) } });
  });

  it('lets a second reader follow live, each with its own demand, both reading every event', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat('sim-long'), headers: { 'x-sim-tokens-per-second': '200' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(3);
    const second = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=0`);
    expect(second.status).toBe(200);
    // The second reader is live before the first one ends.
    await second.atLeast(first.events.length + 1);
    expect(t.sim.requests[t.sim.requests.length - 1]!.outcome).toBe('active');
    await Promise.all([first.ended, second.ended]);
    expect(second.events.map((e) => e.data)).toEqual(first.events.map((e) => e.data));
    expect(seqs(second.events, streamId)).toEqual(seqs(first.events, streamId));
  });

  it('refuses a resume with another credential, and serves the same one', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat(), headers: { authorization: 'Bearer alice' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const mallory = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { authorization: 'Bearer mallory' } });
    await mallory.ended;
    expect(mallory.status).toBe(403);
    expect(JSON.parse(mallory.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_RESUME_FORBIDDEN' } });
    const none = await readSse(`${t.gateway.url}/v1/streams/${streamId}`);
    await none.ended;
    expect(none.status).toBe(403);
    const alice = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { authorization: 'Bearer alice' } });
    await alice.ended;
    expect(alice.status).toBe(200);
    expect(alice.events.length).toBe(first.events.length);
  });

  it('resumes an error-ended stream from its last event as SSE ending with the error event the original ended with', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat(), headers: { 'x-sim-fault': 'reset' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const error = first.events[first.events.length - 1]!;
    expect(JSON.parse(error.data)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET' } });
    const numbered = first.events.filter((e) => e.lastEventId.startsWith(streamId));
    const last = numbered[numbered.length - 1]!.lastEventId;
    const again = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': last } });
    await again.ended;
    expect(again.status).toBe(200);
    expect(again.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(again.events.map((e) => [e.type, e.data])).toEqual([[error.type, error.data]]);
  });

  it('answers a clean empty 200 to a resume of a completed stream after its terminator', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat() });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const done = first.events[first.events.length - 1]!;
    expect(done.data).toBe('[DONE]');
    const again = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': done.lastEventId } });
    await again.ended;
    expect(again.status).toBe(200);
    expect(again.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(again.events).toEqual([]);
  });

  it('takes one credential in either header: a stream started with Bearer K resumes with x-api-key K', async () => {
    const first = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: chat(), headers: { authorization: 'Bearer carol' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const byKey = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'x-api-key': 'carol' } });
    await byKey.ended;
    expect(byKey.status).toBe(200);
    expect(byKey.events.length).toBe(first.events.length);
    const other = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'x-api-key': 'Bearer carol' } });
    await other.ended;
    expect(other.status).toBe(403);
  });

  it('refuses in the Anthropic error shape on an Anthropic route, and replays its message_stop', async () => {
    const body = { model: 'sim-claude', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const first = await readSse(`${t.gateway.url}/resume/v1/messages`, { body, headers: { 'x-api-key': 'alice' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.ended;
    const other = await readSse(`${t.gateway.url}/v1/streams/${streamId}`, { headers: { 'x-api-key': 'mallory' } });
    await other.ended;
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body)).toMatchObject({ type: 'error', error: { code: 'ERR_TIDEGATE_RESUME_FORBIDDEN' } });
    const again = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=2`, { headers: { 'x-api-key': 'alice' } });
    await again.ended;
    // A ping a reader took live is not logged: the replay has the numbered events.
    const numbered = (events: typeof first.events): string[] => events.filter((e) => e.type !== 'ping').map((e) => e.type);
    expect(numbered(again.events)).toEqual(numbered(first.events).slice(2));
    expect(again.events[again.events.length - 1]!.type).toBe('message_stop');
  });
});
