import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { redisAvailable, startRedis, type RedisProcess } from '../harness/redis';
import { SIM_HEADERS, startTestGateway, type TestGateway } from '../gateway/helpers';

// OpenAI's own resume form, `responses.retrieve(id, { stream: true, starting_after })`, through
// a resumable Responses route in front of an upstream that knows nothing of it (the simulator).

const forwardHeaders = ['content-type', ...SIM_HEADERS];
const slow = { headers: { 'x-sim-tokens-per-second': '400' } };

/** Reads `stream` until `k` events (then drops the connection) or its end. */
async function readEvents(stream: AsyncIterable<ResponseStreamEvent>, k = Infinity): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const e of stream) {
    events.push(e);
    if (events.length === k) break;
  }
  return events;
}

const textOf = (events: readonly ResponseStreamEvent[]): string => events.map((e) => (e.type === 'response.output_text.delta' ? e.delta : '')).join('');
const responseIdOf = (events: readonly ResponseStreamEvent[]): string => {
  const created = events.find((e) => e.type === 'response.created');
  if (created?.type !== 'response.created') throw new Error('no response.created');
  return created.response.id;
};

async function refusal(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as InstanceType<typeof OpenAI.APIError>;
}

describe('responses.retrieve({ stream: true, starting_after }) on a resumable route (memory store)', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({
      sim: { tokensPerSecond: 2000, ttftMs: 1 },
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
      routes: [
        { path: '/v1/responses', provider: 'openai', forwardHeaders, resume: true },
        { path: '/small/v1/responses', upstreamPath: '/v1/responses', provider: 'openai', forwardHeaders, resume: { windowBytes: 1024 } },
      ],
    });
  });
  afterAll(() => t.close());

  const client = (apiKey = 'k', prefix = ''): OpenAI => new OpenAI({ baseURL: `${t.gateway.url}${prefix}/v1`, apiKey, maxRetries: 0 });
  const direct = async (model: string): Promise<string> => (await new OpenAI({ baseURL: `${t.sim.url}/v1`, apiKey: 'k', maxRetries: 0 }).responses.create({ model, input: 'hi' })).output_text;

  it('continues after the last sequence_number the client read: the direct answer, no duplicate, no gap', async () => {
    const expected = await direct('sim-long');
    const first = await readEvents(await client().responses.create({ model: 'sim-long', input: 'hi', stream: true }, slow), 12);
    const lastSeq = first[first.length - 1]!.sequence_number;
    const rest = await readEvents(await client().responses.retrieve(responseIdOf(first), { stream: true, starting_after: lastSeq }));
    const all = [...first, ...rest];
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => first[0]!.sequence_number + i));
    expect(rest[0]!.sequence_number).toBe(lastSeq + 1);
    expect(rest[rest.length - 1]!.type).toBe('response.completed');
    expect(expected.length).toBeGreaterThan(100);
    expect(textOf(all)).toBe(expected);
  }, 30_000);

  it('without starting_after replays the whole stream from response.created', async () => {
    const first = await readEvents(await client().responses.create({ model: 'sim-zh', input: 'hi', stream: true }));
    const again = await readEvents(await client().responses.retrieve(responseIdOf(first), { stream: true }));
    expect(again).toEqual(first);
  });

  it('without stream=true answers the final response object once the stream ended, 409 while it runs', async () => {
    const first = await readEvents(await client().responses.create({ model: 'sim-long', input: 'hi', stream: true }, slow), 6);
    const id = responseIdOf(first);
    const running = await refusal(client().responses.retrieve(id));
    expect(running.status).toBe(409);
    expect(running.code).toBe('ERR_TIDEGATE_RESPONSE_IN_PROGRESS');
    const done = await readEvents(await client().responses.create({ model: 'sim-responses', input: 'hi', stream: true }));
    const response = await client().responses.retrieve(responseIdOf(done));
    expect(response).toMatchObject({ id: responseIdOf(done), object: 'response', status: 'completed' });
    expect(response.output_text).toBe(await direct('sim-responses'));
  }, 30_000);

  it('refuses an unknown response id with 404 in the OpenAI error shape', async () => {
    const err = await refusal(client().responses.retrieve('resp_unknown', { stream: true, starting_after: 3 }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe('ERR_TIDEGATE_STREAM_NOT_FOUND');
    expect((await refusal(client().responses.retrieve('resp_unknown'))).status).toBe(404);
  });

  it('refuses a position before the window with 410 ERR_TIDEGATE_RESUME_GAP, and resumes within it', async () => {
    const all = await readEvents(await client('k', '/small').responses.create({ model: 'sim-long', input: 'hi', stream: true }, { headers: { 'x-sim-tokens-per-second': 'Infinity' } }));
    const id = responseIdOf(all);
    const gap = await refusal(client('k', '/small').responses.retrieve(id, { stream: true, starting_after: all[1]!.sequence_number }));
    expect(gap.status).toBe(410);
    expect(gap.code).toBe('ERR_TIDEGATE_RESUME_GAP');
    const n = all.length;
    // The window (1 KiB) holds only the last event (response.completed): the one before it is a
    // position the log still covers.
    const tail = await readEvents(await client('k', '/small').responses.retrieve(id, { stream: true, starting_after: all[n - 2]!.sequence_number }));
    expect(tail).toEqual(all.slice(n - 1));
    // Another route's response is unknown here.
    expect((await refusal(client().responses.retrieve(id, { stream: true, starting_after: all[n - 2]!.sequence_number }))).status).toBe(404);
  }, 30_000);

  it('refuses another credential with 403, as /v1/streams does', async () => {
    const first = await readEvents(await client('alice').responses.create({ model: 'sim-zh', input: 'hi', stream: true }));
    const id = responseIdOf(first);
    const err = await refusal(client('mallory').responses.retrieve(id, { stream: true, starting_after: 2 }));
    expect(err.status).toBe(403);
    expect(err.code).toBe('ERR_TIDEGATE_RESUME_FORBIDDEN');
    expect((await refusal(client('mallory').responses.retrieve(id))).status).toBe(403);
    expect(await readEvents(await client('alice').responses.retrieve(id, { stream: true, starting_after: 2 }))).toEqual(first.slice(3));
  });

  it('ends a resumed stream as the original failed: its error events numbered on, naming the response', async () => {
    type Wire = { event: string | undefined; data: Record<string, unknown> };
    const parse = (text: string): Wire[] =>
      text
        .trim()
        .split('\n\n')
        .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown> }));
    const res = await fetch(`${t.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k', 'x-sim-fault': 'truncate', 'x-sim-fault-after': '3' },
      body: JSON.stringify({ model: 'sim-responses', input: 'hi', stream: true }),
    });
    const original = parse(await res.text());
    const [error, failed] = original.slice(-2);
    expect(error!.event).toBe('error');
    expect(failed!.event).toBe('response.failed');
    const kept = original.slice(0, -2);
    const id = (kept[0]!.data.response as { id: string }).id;
    const from = kept[kept.length - 2]!.data.sequence_number as number;
    const again = await fetch(`${t.gateway.url}/v1/responses/${id}?stream=true&starting_after=${from}`, { headers: { authorization: 'Bearer k' } });
    expect(again.status).toBe(200);
    expect(parse(await again.text())).toEqual([kept[kept.length - 1], error, failed]);
  });

  it("sends a failed stream's error events only to a client that has not read them: those numbered after starting_after", async () => {
    type Wire = { event: string | undefined; sequence: unknown };
    const parse = (text: string): Wire[] =>
      text
        .split('\n\n')
        .filter((block) => block.trim() !== '')
        .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], sequence: (JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as { sequence_number?: unknown }).sequence_number }));
    const res = await fetch(`${t.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k', 'x-sim-fault': 'truncate', 'x-sim-fault-after': '3' },
      body: JSON.stringify({ model: 'sim-responses', input: 'hi', stream: true }),
    });
    const text = await res.text();
    const original = parse(text);
    const [error, failed] = original.slice(-2);
    expect([error!.event, failed!.event]).toEqual(['error', 'response.failed']);
    expect(failed!.sequence).toBe((error!.sequence as number) + 1);
    const id = (JSON.parse(/^data: (.*)$/m.exec(text)![1]!) as { response: { id: string } }).response.id;
    const resume = async (after: unknown): Promise<Wire[]> => {
      const again = await fetch(`${t.gateway.url}/v1/responses/${id}?stream=true&starting_after=${String(after)}`, { headers: { authorization: 'Bearer k' } });
      expect(again.status).toBe(200);
      return parse(await again.text());
    };
    expect(await resume(error!.sequence)).toEqual([failed]);
    expect(await resume(failed!.sequence)).toEqual([]);
  });

  it('refuses a starting_after past the events relayed so far with 400', async () => {
    const first = await readEvents(await client().responses.create({ model: 'sim-long', input: 'hi', stream: true }, slow), 5);
    const err = await refusal(client().responses.retrieve(responseIdOf(first), { stream: true, starting_after: 100_000 }));
    expect(err.status).toBe(400);
  });
});

const withRedis = redisAvailable() ? describe : describe.skip;

withRedis('responses.retrieve({ stream: true, starting_after }) on another instance (redis store)', () => {
  let redis: RedisProcess;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    redis = await startRedis();
    const gateway = (): Promise<TestGateway> =>
      startTestGateway({
        sim: { tokensPerSecond: 2000, ttftMs: 1 },
        config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, redis: { url: redis.url, leaseMs: 600 } },
        routes: [{ path: '/v1/responses', provider: 'openai', forwardHeaders, resume: { store: 'redis' } }],
      });
    [a, b] = await Promise.all([gateway(), gateway()]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  it('resolves the response id through Redis and continues from starting_after: no duplicate, no gap', async () => {
    const clientOf = (t: TestGateway): OpenAI => new OpenAI({ baseURL: `${t.gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const expected = (await new OpenAI({ baseURL: `${a.sim.url}/v1`, apiKey: 'k', maxRetries: 0 }).responses.create({ model: 'sim-long', input: 'hi' })).output_text;
    const first = await readEvents(await clientOf(a).responses.create({ model: 'sim-long', input: 'hi', stream: true }, slow), 10);
    const lastSeq = first[first.length - 1]!.sequence_number;
    const rest = await readEvents(await clientOf(b).responses.retrieve(responseIdOf(first), { stream: true, starting_after: lastSeq }));
    const all = [...first, ...rest];
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => first[0]!.sequence_number + i));
    expect(rest[rest.length - 1]!.type).toBe('response.completed');
    expect(textOf(all)).toBe(expected);
    const final = await clientOf(b).responses.retrieve(responseIdOf(first));
    expect(final.output_text).toBe(expected);
  }, 30_000);
});
