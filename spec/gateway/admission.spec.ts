import http from 'node:http';
import net from 'node:net';
import { ConfigError, DEFAULT_LIMITS, parseConfig } from '../../src/gateway/config';
import { AdmissionError, bindSlot, createAdmission } from '../../src/gateway/admission';
import { GatewayMetrics } from '../../src/gateway/metrics';
import { parsePrometheus, startTestGateway, type TestGateway } from './helpers';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body so far; for a 200 stream, whatever arrived before `done` was awaited. */
  body: () => string;
  done: Promise<void>;
  req: http.ClientRequest;
  reusedSocket: boolean;
}

let tg: TestGateway | undefined;
const open: http.ClientRequest[] = [];
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const req of open.splice(0)) req.destroy();
  for (const s of sockets.splice(0)) s.destroy();
  await tg?.close();
  tg = undefined;
});

/** POSTs a chat request; resolves at the response head (the body keeps flowing into `body()`). */
function post(port: number, path: string, headers: Record<string, string> = {}, opts: { agent?: http.Agent; tokens?: number } = {}): Promise<Answer> {
  const payload =
    path === '/v1/messages'
      ? { model: `sim-synthetic-${opts.tokens ?? 1000}`, max_tokens: 4096, stream: true, messages: [{ role: 'user', content: 'hi' }] }
      : { model: `sim-synthetic-${opts.tokens ?? 1000}`, stream: true, messages: [{ role: 'user', content: 'hi' }] };
  return request(port, 'POST', path, { 'content-type': 'application/json', 'x-sim-tokens-per-second': '4', 'anthropic-version': '2023-06-01', ...headers }, JSON.stringify(payload), opts.agent);
}

function request(port: number, method: string, path: string, headers: Record<string, string>, body: string | undefined, agent: http.Agent | false = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      const done = new Promise<void>((r) => {
        res.on('end', r);
        res.on('close', r);
      });
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: () => text, done, req, reusedSocket: req.reusedSocket });
    });
    open.push(req);
    req.on('error', reject);
    req.end(body);
  });
}

async function refusals(port: number): Promise<Map<string, number>> {
  const res = await request(port, 'GET', '/metrics', {}, undefined);
  await res.done;
  return parsePrometheus(res.body());
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('admission: streams per client', () => {
  it('answers 429 with Retry-After in the OpenAI error shape to a client over its cap, and admits another client', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 2, retryAfterSeconds: 3 } } });
    const { port } = tg.gateway;
    const a = { authorization: 'Bearer key-a' };
    const held = [await post(port, '/v1/chat/completions', a), await post(port, '/v1/chat/completions', a)];
    expect(held.map((h) => h.status)).toEqual([200, 200]);

    const over = await post(port, '/v1/chat/completions', a);
    await over.done;
    expect(over.status).toBe(429);
    expect(over.headers['retry-after']).toBe('3');
    expect(over.headers.connection).toBe('close');
    expect(JSON.parse(over.body())).toEqual({ error: { message: expect.stringContaining('2 concurrent streams'), type: 'tidegate_error', code: 'ERR_TIDEGATE_CLIENT_LIMIT', param: null } });

    const other = await post(port, '/v1/chat/completions', { authorization: 'Bearer key-b' });
    expect(other.status).toBe(200);
    expect(tg.gateway.app.gateway.admission.streams).toBe(3);
  });

  it('answers 429 in the Anthropic error shape, keyed by x-api-key', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/messages', { 'x-api-key': 'k1' })).status).toBe(200);
    const over = await post(port, '/v1/messages', { 'x-api-key': 'k1' });
    await over.done;
    expect(over.status).toBe(429);
    expect(over.headers['retry-after']).toBe('1');
    expect(JSON.parse(over.body())).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.any(String), code: 'ERR_TIDEGATE_CLIENT_LIMIT' } });
    expect((await post(port, '/v1/messages', { 'x-api-key': 'k2' })).status).toBe(200);
  });

  it('gives a client its slot back when one of its streams ends', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1 } } });
    const { port } = tg.gateway;
    const first = await post(port, '/v1/chat/completions', {}, { tokens: 2 });
    expect(first.status).toBe(200);
    await first.done;
    expect(first.body()).toContain('[DONE]');
    await until(() => tg?.gateway.app.gateway.admission.streams === 0);
    expect((await post(port, '/v1/chat/completions')).status).toBe(200);
  });
});

describe('admission: refusal log', () => {
  const refused = (): Record<string, unknown>[] => (tg?.logs.lines ?? []).filter((l) => l.message === 'refused');

  it('logs one refused line for a stream refused at maxStreams (503)', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 1, maxStreamsPerClient: 10 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { authorization: 'Bearer a' })).status).toBe(200);
    const over = await post(port, '/v1/chat/completions', { authorization: 'Bearer b' });
    await over.done;
    expect(over.status).toBe(503);
    expect(refused()).toEqual([
      expect.objectContaining({ level: 'info', route: '/v1/chat/completions', method: 'POST', status: 503, errorCode: 'ERR_TIDEGATE_OVER_CAPACITY', reason: 'streams' }),
    ]);
    expect(JSON.stringify(refused())).not.toContain('Bearer');
  });

  it('logs one refused line for a stream refused at maxStreamsPerClient (429)', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/messages', { 'x-api-key': 'k1' })).status).toBe(200);
    const over = await post(port, '/v1/messages', { 'x-api-key': 'k1' });
    await over.done;
    expect(over.status).toBe(429);
    expect(refused()).toEqual([
      expect.objectContaining({ level: 'info', route: '/v1/messages', method: 'POST', status: 429, errorCode: 'ERR_TIDEGATE_CLIENT_LIMIT', reason: 'client_streams' }),
    ]);
  });

  it('caps a flood at a few lines a second and sums the rest up in one line', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 1, maxStreamsPerClient: 10 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions')).status).toBe(200);
    const flood = await Promise.all(Array.from({ length: 40 }, () => post(port, '/v1/chat/completions')));
    expect(flood.every((a) => a.status === 503)).toBe(true);
    // The summary comes when the window ends.
    await until(() => (tg?.logs.lines ?? []).some((l) => l.message === 'refusals suppressed'), 3000);
    const lines = refused().length;
    const summaries = (tg?.logs.lines ?? []).filter((l) => l.message === 'refusals suppressed') as { count: number; byCode: Record<string, number> }[];
    expect(lines).toBeLessThanOrEqual(20);
    expect(lines + summaries.reduce((n, s) => n + s.count, 0)).toBe(40);
    expect(summaries[0]).toMatchObject({ byCode: { ERR_TIDEGATE_OVER_CAPACITY: summaries[0]!.count }, windowMs: 1000 });
  });
});

describe('admission: trusted-proxy address header', () => {
  it('ignores X-Forwarded-For unless limits.clientAddressHeader names it', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { 'x-forwarded-for': '10.0.0.1' })).status).toBe(200);
    // Same socket address, another claimed one: still the same client.
    const over = await post(port, '/v1/chat/completions', { 'x-forwarded-for': '10.0.0.2' });
    expect(over.status).toBe(429);
  });

  it('keys clients by the right-most entry of the configured header', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1, clientAddressHeader: 'X-Forwarded-For' } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { 'x-forwarded-for': '203.0.113.7, 10.0.0.1' })).status).toBe(200);
    expect((await post(port, '/v1/chat/completions', { 'x-forwarded-for': '203.0.113.7, 10.0.0.2' })).status).toBe(200);
    // A left-most entry is the client's own claim: it does not make another client.
    expect((await post(port, '/v1/chat/completions', { 'x-forwarded-for': '198.51.100.9, 10.0.0.1' })).status).toBe(429);
  });
});

describe('admission: gateway caps', () => {
  it('answers 503 with Retry-After once the gateway holds maxStreams', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 2, maxStreamsPerClient: 10 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { authorization: 'Bearer a' })).status).toBe(200);
    expect((await post(port, '/v1/chat/completions', { authorization: 'Bearer b' })).status).toBe(200);
    const over = await post(port, '/v1/chat/completions', { authorization: 'Bearer c' });
    await over.done;
    expect(over.status).toBe(503);
    expect(over.headers['retry-after']).toBe('1');
    expect(JSON.parse(over.body()).error).toMatchObject({ type: 'tidegate_error', code: 'ERR_TIDEGATE_OVER_CAPACITY' });
  });

  it('answers 503 and closes a connection past maxConnections, keeping the others', async () => {
    tg = await startTestGateway({ config: { limits: { maxConnections: 2 } } });
    const { port } = tg.gateway;
    const admission = tg.gateway.app.gateway.admission;
    for (let i = 0; i < 2; i++) sockets.push(net.connect(port, '127.0.0.1'));
    await until(() => admission.connections === 2);
    const third = net.connect(port, '127.0.0.1');
    sockets.push(third);
    let reply = '';
    third.setEncoding('utf8').on('data', (d: string) => (reply += d));
    const closed = new Promise<void>((r) => third.once('close', () => r()));
    third.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed;
    expect(reply).toMatch(/^HTTP\/1\.1 503 /);
    expect(reply).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).error.code).toBe('ERR_TIDEGATE_OVER_CAPACITY');
    await until(() => admission.connections === 2);
    // A connection within the cap is served.
    const first = sockets[0];
    let ok = '';
    first.setEncoding('utf8').on('data', (d: string) => (ok += d));
    first.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => ok.includes('"ok"'));
    expect(ok).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('admission: request bodies in progress', () => {
  const chat = JSON.stringify({ model: 'sim-synthetic-1000', stream: true, messages: [{ role: 'user', content: 'hi' }] });

  /** A POST on a raw socket whose body stops after its first byte; `finish()` sends the rest. */
  function dribble(port: number, authorization: string): { finish(): void; reply: () => string; closed: Promise<void> } {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let reply = '';
    socket.setEncoding('utf8').on('data', (d: string) => (reply += d));
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nx-sim-tokens-per-second: 4\r\nContent-Length: ${Buffer.byteLength(chat)}\r\n\r\n`;
    socket.write(head + chat.slice(0, 1));
    return { finish: () => socket.write(chat.slice(1)), reply: () => reply, closed };
  }

  /** Resolves once the gateway has received `n` request heads. */
  function headsArrived(tgw: TestGateway, n: number): Promise<void> {
    let seen = 0;
    return new Promise((resolve) => {
      const onRequest = (): void => {
        if (++seen < n) return;
        tgw.gateway.server.off('request', onRequest);
        resolve();
      };
      tgw.gateway.server.on('request', onRequest);
    });
  }

  async function held(port: number): Promise<{ gauge: number; debug: number; debugStreams: number }> {
    const m = await refusals(port);
    const debug = await request(port, 'GET', '/debug/streams', {}, undefined);
    await debug.done;
    const body = JSON.parse(debug.body()) as { activeStreams: number; streams: unknown[] };
    return { gauge: m.get('tidegate_active_streams{route="/v1/chat/completions"}') ?? 0, debug: body.activeStreams, debugStreams: body.streams.length };
  }

  it('leaves maxStreams to other clients while two bodies dribble in, each under a made-up key', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 2, maxStreamsPerClient: 0 }, debug: { streams: true } } });
    const { port } = tg.gateway;
    const arrived = headsArrived(tg, 2);
    const uploads = [dribble(port, 'Bearer made-up-1'), dribble(port, 'Bearer made-up-2')];
    await arrived;
    expect(tg.gateway.app.gateway.admission.streams).toBe(0);
    expect(await held(port)).toEqual({ gauge: 0, debug: 0, debugStreams: 0 });

    const third = await post(port, '/v1/chat/completions', { authorization: 'Bearer legit' });
    expect(third.status).toBe(200);
    await until(() => third.body().includes('data:'));
    expect(tg.gateway.app.gateway.admission.streams).toBe(1);
    expect(await held(port)).toEqual({ gauge: 1, debug: 1, debugStreams: 1 });
    for (const u of uploads) u.finish();
    await until(() => uploads.every((u) => /^HTTP\/1\.1 \d{3} /.test(u.reply())));
    // One upload takes the last slot once its body is in; the other loses it then.
    const statuses = uploads.map((u) => Number(u.reply().slice(9, 12))).sort();
    expect(statuses).toEqual([200, 503]);
  });

  /**
   * Starts a gateway with `limits`, begins an upload under `uploadKey`, opens a stream under
   * `streamKey` while it dribbles (it takes the last slot), then finishes the upload: the
   * gateway and the upload's reply.
   */
  async function uploadThatLosesTheSlot(limits: Record<string, number>, uploadKey: string, streamKey: string): Promise<{ tgw: TestGateway; reply: string }> {
    const tgw = (tg = await startTestGateway({ config: { limits, debug: { streams: true } } }));
    const { port } = tgw.gateway;
    const arrived = headsArrived(tgw, 1);
    const upload = dribble(port, uploadKey);
    await arrived;
    const stream = await post(port, '/v1/chat/completions', { authorization: streamKey });
    expect(stream.status).toBe(200);
    upload.finish();
    await upload.closed;
    return { tgw, reply: upload.reply() };
  }

  it('answers 503 ERR_TIDEGATE_OVER_CAPACITY to a body that arrives once maxStreams is held', async () => {
    const { tgw, reply } = await uploadThatLosesTheSlot({ maxStreams: 1, maxStreamsPerClient: 0 }, 'Bearer made-up', 'Bearer legit');
    const { port } = tgw.gateway;
    expect(reply).toMatch(/^HTTP\/1\.1 503 /);
    expect(reply).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ type: 'tidegate_error', code: 'ERR_TIDEGATE_OVER_CAPACITY' });
    expect(tgw.gateway.app.gateway.admission.streams).toBe(1);
    expect(await held(port)).toEqual({ gauge: 1, debug: 1, debugStreams: 1 });
    expect((await refusals(port)).get('tidegate_admission_refusals_total{reason="streams"}')).toBe(1);
  });

  it('answers 429 ERR_TIDEGATE_CLIENT_LIMIT to a body that arrives once its client holds maxStreamsPerClient', async () => {
    const { tgw, reply } = await uploadThatLosesTheSlot({ maxStreamsPerClient: 1 }, 'Bearer key-a', 'Bearer key-a');
    expect(reply).toMatch(/^HTTP\/1\.1 429 /);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ code: 'ERR_TIDEGATE_CLIENT_LIMIT' });
    expect(tgw.gateway.app.gateway.admission.streams).toBe(1);
  });

  it('refuses a request over capacity before reading its body', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 1, maxStreamsPerClient: 0 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { authorization: 'Bearer a' })).status).toBe(200);
    const upload = dribble(port, 'Bearer b');
    await until(() => /^HTTP\/1\.1 503 /.test(upload.reply()));
    expect(upload.reply()).toContain('ERR_TIDEGATE_OVER_CAPACITY');
  });

  it('refuses an Expect: 100-continue request over capacity without inviting its upload', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 1, maxStreamsPerClient: 0 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions', { authorization: 'Bearer a' })).status).toBe(200);
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let reply = '';
    socket.setEncoding('utf8').on('data', (d: string) => (reply += d));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${Buffer.byteLength(chat)}\r\n\r\n`);
    await until(() => reply.includes('ERR_TIDEGATE_OVER_CAPACITY'));
    expect(reply).toMatch(/^HTTP\/1\.1 503 /);
    expect(reply).not.toContain('100 Continue');
  });
});

describe('admission: without a per-client limit', () => {
  /** A request whose socket fails the test if its peer address is read. */
  const unreadRequest = (headers: http.IncomingHttpHeaders = {}): http.IncomingMessage => {
    const socket = {};
    Object.defineProperty(socket, 'remoteAddress', { get: () => { throw new Error('the peer address was read'); } });
    return { headers, socket } as unknown as http.IncomingMessage;
  };

  it('counts streams without keying their clients, each release once', () => {
    const admission = createAdmission({ ...DEFAULT_LIMITS, maxStreams: 2, maxStreamsPerClient: 0 }, new GatewayMetrics());
    const a = admission.admitStream(unreadRequest());
    const b = admission.admitStream(unreadRequest({ authorization: 'Bearer k' }));
    expect(typeof a).toBe('function');
    expect(typeof b).toBe('function');
    expect(admission.streams).toBe(2);
    const over = admission.admitStream(unreadRequest());
    expect(over).toBeInstanceOf(AdmissionError);
    expect((over as AdmissionError).reason).toBe('streams');
    (a as () => void)();
    (a as () => void)();
    expect(admission.streams).toBe(1);
    expect(typeof admission.admitStream(unreadRequest())).toBe('function');
    expect(admission.streams).toBe(2);
  });

  it('keys clients by their peer address once the limit is on', () => {
    const admission = createAdmission({ ...DEFAULT_LIMITS, maxStreamsPerClient: 1 }, new GatewayMetrics());
    const req = (address: string): http.IncomingMessage => ({ headers: {}, socket: { remoteAddress: address } }) as unknown as http.IncomingMessage;
    expect(typeof admission.admitStream(req('10.0.0.1'))).toBe('function');
    expect((admission.admitStream(req('10.0.0.1')) as AdmissionError).reason).toBe('client_streams');
    expect(typeof admission.admitStream(req('10.0.0.2'))).toBe('function');
  });
});

describe('admission: metrics', () => {
  it('counts refusals by reason in tidegate_admission_refusals_total', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreamsPerClient: 1, maxRequestBodyBytes: 1024 } } });
    const { port } = tg.gateway;
    expect((await post(port, '/v1/chat/completions')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await post(port, '/v1/chat/completions')).status).toBe(429);
    const big = await request(port, 'POST', '/v1/chat/completions', { 'content-type': 'application/json', authorization: 'Bearer other' }, JSON.stringify({ pad: 'x'.repeat(2048) }));
    await big.done;
    expect(big.status).toBe(413);
    const m = await refusals(port);
    expect(m.get('tidegate_admission_refusals_total{reason="client_streams"}')).toBe(2);
    expect(m.get('tidegate_admission_refusals_total{reason="body_too_large"}')).toBe(1);
    expect(m.get('tidegate_admission_refusals_total{reason="streams"}')).toBeUndefined();
  });
});

describe('admission: shutdown drain', () => {
  it('answers /readyz 503 with Connection: close on a kept-alive connection that was idle at SIGTERM', async () => {
    tg = await startTestGateway({ config: { shutdown: { graceMs: 5000 } } });
    const { port } = tg.gateway;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const stream = await post(port, '/v1/chat/completions'); // keeps the drain open
      expect(stream.status).toBe(200);
      const before = await request(port, 'GET', '/readyz', {}, undefined, agent);
      await before.done;
      expect(before.status).toBe(200);

      const stopping = tg.gateway.shutdown();
      await until(() => !tg?.gateway.app.gateway.ready);
      await new Promise((r) => setTimeout(r, 50));
      const during = await request(port, 'GET', '/readyz', {}, undefined, agent);
      await during.done;
      expect(during.reusedSocket).toBe(true);
      expect(during.status).toBe(503);
      expect(during.headers.connection).toBe('close');
      expect(JSON.parse(during.body())).toMatchObject({ status: 'shutting_down', activeStreams: 1 });
      // New connections are answered too while the stream drains (shutdown-drain-window.spec.ts)...
      const fresh = await request(port, 'GET', '/readyz', {}, undefined);
      await fresh.done;
      expect([fresh.status, fresh.headers.connection]).toEqual([503, 'close']);

      stream.req.destroy();
      await stopping;
      // ...and refused once it ended.
      await expect(request(port, 'GET', '/readyz', {}, undefined)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
    }
  });
});

describe('admission: Node request timeout', () => {
  it('does not cut a stream that lasts longer than the request timeout (it counts until the request is received)', async () => {
    tg = await startTestGateway({ config: { limits: { headersTimeoutMs: 300, requestBodyTimeoutMs: 300 } } });
    const { port, server } = tg.gateway;
    expect(server.requestTimeout).toBe(1600);
    const t0 = Date.now();
    const res = await post(port, '/v1/chat/completions', { 'x-sim-tokens-per-second': '5' }, { tokens: 20 });
    await res.done;
    const ms = Date.now() - t0;
    expect(res.status).toBe(200);
    expect(res.body()).toContain('data: [DONE]');
    // Longer than the request timeout plus two of Node's 1 s timeout checks.
    expect(ms).toBeGreaterThan(3600);
  }, 20_000);
});

describe('admission: limits configuration', () => {
  it('defaults every limit and lower-cases the address header', () => {
    expect(parseConfig({}).limits).toEqual(DEFAULT_LIMITS);
    expect(parseConfig({ limits: { clientAddressHeader: 'X-Real-IP' } }).limits.clientAddressHeader).toBe('x-real-ip');
  });

  it('rejects a bad limit naming its field', () => {
    expect(() => parseConfig({ limits: { maxStreamsPerClient: -1 } })).toThrow(ConfigError);
    expect(() => parseConfig({ limits: { maxStreamsPerClient: -1 } })).toThrow(/limits\.maxStreamsPerClient/);
    expect(() => parseConfig({ limits: { clientAddressHeader: 'bad header' } })).toThrow(/limits\.clientAddressHeader: not an HTTP header name/);
    expect(() => parseConfig({ limits: { maxConnection: 5 } })).toThrow(/limits\.maxConnection: Unrecognized key/);
  });
});

describe('bindSlot', () => {
  /** A server whose next request's response is handed out, with the client's request to end it. */
  async function exchange(): Promise<{ res: http.ServerResponse; client: http.ClientRequest; server: http.Server }> {
    const server = http.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const arrived = new Promise<http.ServerResponse>((r) => server.once('request', (_req, res: http.ServerResponse) => r(res)));
    const client = http.request({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, path: '/', agent: false });
    client.on('error', () => undefined);
    client.end();
    return { res: await arrived, client, server };
  }

  it('releases once, on the response close, whatever comes after', async () => {
    const { res, client, server } = await exchange();
    const release = jest.fn();
    const slot = bindSlot(release, res);
    client.destroy();
    await new Promise((r) => res.once('close', r));
    expect(release).toHaveBeenCalledTimes(1);
    slot.end();
    expect(release).toHaveBeenCalledTimes(1);
    expect(res.listenerCount('close')).toBe(0);
    server.close();
  });

  it('releases once, at the stream end, before the response closes', async () => {
    const { res, server } = await exchange();
    const release = jest.fn();
    const slot = bindSlot(release, res);
    slot.end();
    expect(release).toHaveBeenCalledTimes(1);
    res.end();
    await new Promise((r) => res.once('close', r));
    expect(release).toHaveBeenCalledTimes(1);
    server.close();
  });

  it('releases at once a slot bound to a response already closed', async () => {
    const { res, client, server } = await exchange();
    client.destroy();
    await new Promise((r) => res.once('close', r));
    const release = jest.fn();
    bindSlot(release, res);
    expect(release).toHaveBeenCalledTimes(1);
    server.close();
  });

  it('leaves a held slot to its holder', async () => {
    const { res, client, server } = await exchange();
    const release = jest.fn();
    const slot = bindSlot(release, res);
    const held = slot.hold();
    client.destroy();
    await new Promise((r) => res.once('close', r));
    slot.end();
    expect(release).not.toHaveBeenCalled();
    held();
    expect(release).toHaveBeenCalledTimes(1);
    server.close();
  });
});
