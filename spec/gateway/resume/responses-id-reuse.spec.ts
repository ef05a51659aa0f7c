import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { redisAvailable, startRedis, type RedisProcess } from '../../harness/redis';
import { startTestGateway, type TestGateway } from '../helpers';

// An upstream whose response ids repeat (fixed or counter ids): the id two streams share must
// not hand one client's stream to another through `GET /v1/responses/{id}`.

/** Responses of `#hang` inputs the gateway has not yet closed. */
const hanging = new Set<http.ServerResponse>();

/**
 * A Responses upstream naming each response `resp_<input>` (up to a `#`), its one delta the input
 * reversed. An input ending in `#hang` gets `response.created` and nothing more.
 */
function fixedIdUpstream(): http.Server {
  return http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const input = String((JSON.parse(body) as { input: unknown }).input);
      const text = [...input].reverse().join('');
      const response = { id: `resp_${input.split('#')[0]}`, object: 'response', status: 'in_progress', output: [] as unknown[] };
      const done = { ...response, status: 'completed', output_text: text };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events: [string, Record<string, unknown>][] = [
        ['response.created', { response }],
        ['response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: text }],
        ['response.completed', { response: done }],
      ];
      const frames = events.map(([type, data], i) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: i, ...data })}\n\n`);
      if (input.endsWith('#hang')) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        res.write(frames[0]);
      } else res.end(frames.join(''));
    });
  });
}

/** Listens on an ephemeral 127.0.0.1 port; returns its URL. */
async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Starts a Responses stream of `input` on `t` and reads it to its end. */
async function create(t: TestGateway, input: string): Promise<string> {
  const res = await fetch(`${t.gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input, stream: true }) });
  expect(res.status).toBe(200);
  return res.text();
}

/** Polls `check` until it holds, up to `tries` × 20 ms (the gateway's Redis writes and upstream cancels are not awaited by the client). */
async function eventually(check: () => boolean | Promise<boolean>, tries = 100): Promise<void> {
  for (let i = 0; i < tries && !(await check()); i++) await new Promise((r) => setTimeout(r, 20));
}

const retrieve = (t: TestGateway, id: string, query = ''): Promise<Response> => fetch(`${t.gateway.url}/v1/responses/${id}${query}`);

/** Starts a Responses stream of `input` on `t` and reads it up to `response.created`; returns how to leave it. */
async function openHanging(t: TestGateway, input: string): Promise<() => Promise<void>> {
  const leave = new AbortController();
  const res = await fetch(`${t.gateway.url}/v1/responses`, { method: 'POST', signal: leave.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input, stream: true }) });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('response.created')) seen += new TextDecoder().decode((await reader.read()).value);
  return async () => {
    leave.abort();
    await reader.cancel().catch(() => undefined);
  };
}

/** Two running streams name `resp_<input>` (404) and are cancelled; a third then names it and completes: the id answers with the third. */
async function expectReusedIdFreedWhenBothCancelled(first: TestGateway, second: TestGateway, input: string): Promise<void> {
  const leaving = [await openHanging(first, `${input}#hang`), await openHanging(second, `${input}#hang`)];
  await eventually(async () => (await retrieve(first, `resp_${input}`)).status === 404);
  for (const t of [first, second]) expect((await retrieve(t, `resp_${input}`)).status).toBe(404);
  for (const leave of leaving) await leave();
  // Cancelled upstream once the gateway dropped them (no linger).
  await eventually(() => hanging.size === 0, 200);
  expect(hanging.size).toBe(0);
  await create(first, input);
  for (const t of [first, second]) {
    let res!: Response;
    await eventually(async () => (res = await retrieve(t, `resp_${input}`)).status === 200);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: `resp_${input}`, output_text: [...input].reverse().join('') });
  }
}

describe('GET /v1/responses/{id} when the upstream gives one id to two streams', () => {
  let t: TestGateway;
  let upstream: http.Server;
  beforeAll(async () => {
    upstream = fixedIdUpstream();
    const url = await listen(upstream);
    t = await startTestGateway({
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, upstream: { url } },
      routes: [{ path: '/v1/responses', provider: 'openai', resume: { lingerMs: 0 } }],
    });
  });
  afterAll(async () => {
    await t.close();
    await new Promise((r) => upstream.close(r));
  });

  it('answers a response id one stream named with that stream', async () => {
    await create(t, 'solo');
    const whole = await retrieve(t, 'resp_solo');
    expect(whole.status).toBe(200);
    expect(await whole.json()).toMatchObject({ id: 'resp_solo', output_text: 'olos' });
    const streamed = await retrieve(t, 'resp_solo', '?stream=true');
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('"delta":"olos"');
  });

  it('refuses with 404 an id two streams named, for either client, and logs the reuse', async () => {
    const first = await create(t, 'twice');
    const second = await create(t, 'twice');
    expect(first).toContain('"id":"resp_twice"');
    expect(second).toContain('"id":"resp_twice"');
    for (const query of ['', '?stream=true']) {
      const res = await retrieve(t, 'resp_twice', query);
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('ERR_TIDEGATE_STREAM_NOT_FOUND');
    }
    expect(t.logs.lines.filter((l) => l.level === 'warn' && l.outcome === 'alias-reused' && l.alias === 'resp_twice')).toHaveLength(1);
    // A third stream with the same id does not make it resolve again.
    await create(t, 'twice');
    expect((await retrieve(t, 'resp_twice')).status).toBe(404);
  });

  it('answers an id with reserved URL characters, and 404s one longer than 256 characters', async () => {
    const odd = 'a/b c%3F?\u00e9:!';
    await create(t, odd);
    const oddId = `resp_${odd}`;
    const res = await retrieve(t, encodeURIComponent(oddId));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: oddId });
    const long = 'l'.repeat(300);
    await create(t, long);
    expect((await retrieve(t, `resp_${long}`)).status).toBe(404);
  });

  it('answers an id again with the next stream once both streams that named it were cancelled', async () => {
    await expectReusedIdFreedWhenBothCancelled(t, t, 'back');
    expect(t.logs.lines.filter((l) => l.outcome === 'alias-reused' && l.alias === 'resp_back')).toHaveLength(1);
  });
});

const withRedis = redisAvailable() ? describe : describe.skip;

withRedis('GET /v1/responses/{id} when two instances sharing Redis got one id for two streams', () => {
  let redis: RedisProcess;
  let upstream: http.Server;
  let a: TestGateway;
  let b: TestGateway;
  let upstreamUrl: string;
  beforeAll(async () => {
    redis = await startRedis();
    upstream = fixedIdUpstream();
    const url = (upstreamUrl = await listen(upstream));
    const gateway = (): Promise<TestGateway> =>
      startTestGateway({
        config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, upstream: { url }, redis: { url: redis.url, leaseMs: 600 } },
        routes: [{ path: '/v1/responses', provider: 'openai', resume: { store: 'redis', lingerMs: 0 } }],
      });
    [a, b] = await Promise.all([gateway(), gateway()]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await new Promise((r) => upstream?.close(r));
    await redis?.stop();
  });

  it('answers a unique id on the other instance, and refuses an id each instance gave a stream', async () => {
    await create(a, 'once');
    await eventually(async () => (await retrieve(b, 'resp_once')).status === 200);
    expect(await (await retrieve(b, 'resp_once')).json()).toMatchObject({ id: 'resp_once', output_text: 'ecno' });

    await create(a, 'shared');
    await create(b, 'shared');
    await eventually(async () => (await retrieve(a, 'resp_shared')).status === 404);
    for (const t of [a, b]) for (const query of ['', '?stream=true']) expect((await retrieve(t, 'resp_shared', query)).status).toBe(404);
    const warned = [...a.logs.lines, ...b.logs.lines].filter((l) => l.outcome === 'alias-reused' && l.alias === 'resp_shared');
    expect(warned).toHaveLength(1);
  }, 30_000);

  it('refuses on its own instance an id whose claim in Redis failed while Redis names another stream', async () => {
    const other = await fetch(`${a.gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'elsewhere', stream: true }) });
    const otherStreamId = String(other.headers.get('x-tidegate-stream-id'));
    await other.text();
    const control = new Redis(redis.url);
    try {
      await control.set('tidegate:a:resp_stuck', otherStreamId);
      // Not a sorted set: the claim's script fails, as with Redis unreachable.
      await control.set('tidegate:ah:resp_stuck', 'x');
      await create(b, 'stuck');
      for (const query of ['', '?stream=true']) expect((await retrieve(b, 'resp_stuck', query)).status).toBe(404);
    } finally {
      control.disconnect();
    }
  }, 30_000);

  it('keeps a running stream the holder of its id past the time its claim gave it', async () => {
    // A claim holds for retentionMs + 2 × leaseMs (700 ms here): only the renewal beside the lease keeps it.
    const short = await startTestGateway({
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 }, upstream: { url: upstreamUrl }, redis: { url: redis.url, leaseMs: 300 } },
      routes: [{ path: '/v1/responses', provider: 'openai', resume: { store: 'redis', lingerMs: 0, retentionMs: 100 } }],
    });
    const control = new Redis(redis.url);
    try {
      const leave = await openHanging(short, 'held#hang');
      await eventually(async () => (await control.exists('tidegate:a:resp_held')) === 1);
      const named = await control.get('tidegate:a:resp_held');
      expect(named).not.toBeNull();
      await new Promise((r) => setTimeout(r, 1500));
      expect(await control.get('tidegate:a:resp_held')).toBe(named);
      expect(await control.zrange('tidegate:ah:resp_held', '0', '-1')).toEqual([named]);
      await leave();
    } finally {
      control.disconnect();
      await short.close();
    }
  }, 30_000);

  it('answers an id again with the next stream once the streams each instance gave it were cancelled', async () => {
    await expectReusedIdFreedWhenBothCancelled(a, b, 'back');
    const warned = [...a.logs.lines, ...b.logs.lines].filter((l) => l.outcome === 'alias-reused' && l.alias === 'resp_back');
    expect(warned).toHaveLength(1);
  }, 30_000);
});
