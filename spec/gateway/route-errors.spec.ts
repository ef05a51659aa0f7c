import * as net from 'node:net';
import * as os from 'node:os';
import * as util from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { upstreamAgent } from '../../src/http/node-hooks';
import { startTestGateway, type TestGateway } from './helpers';

// Every error a route answers comes in its provider's shape, so each SDK raises it readably;
// an upstream nobody can connect to is told apart from one that broke after connecting.

let t: TestGateway;
let refusedPort: number;
let resetServer: net.Server;
let resetPort: number;

// `.invalid` names never resolve (RFC 6761 §6.4): the resolver answers ENOTFOUND without a network.
const UNRESOLVED = 'upstream.tidegate.invalid';
// A host whose connect fails with no route to it. The kernel says so only where a route or a
// neighbour is missing, which differs per machine (or hangs until the connect timeout), so the
// upstream agent fails this host's socket with the error net gives for it: errno and code from
// the system's table, syscall `connect`, the address and port.
const UNROUTABLE = 'unroutable.tidegate.invalid';
const plainAgent = upstreamAgent(new URL('http://127.0.0.1/')) as unknown as { createConnection: (...args: unknown[]) => unknown };
const createConnection = plainAgent.createConnection;

function hostUnreachable(address: string, port: number): NodeJS.ErrnoException {
  const errno = -os.constants.errno.EHOSTUNREACH;
  const code = util.getSystemErrorName(errno);
  return Object.assign(new Error(`connect ${code} ${address}:${port}`), { errno, code, syscall: 'connect', address, port });
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  refusedPort = await freePort();
  // Accepts, reads the request, then resets the connection before any status line.
  resetServer = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  await new Promise<void>((resolve) => resetServer.listen(0, '127.0.0.1', resolve));
  resetPort = (resetServer.address() as net.AddressInfo).port;
  plainAgent.createConnection = function (this: unknown, ...args: unknown[]): unknown {
    if ((args[0] as net.TcpNetConnectOpts).host !== UNROUTABLE) return createConnection.apply(this, args);
    const socket = new net.Socket();
    process.nextTick(() => socket.destroy(hostUnreachable('100::1', 80)));
    return socket;
  };
  t = await startTestGateway({
    config: { retry: { maxAttempts: 1 }, upstream: { apiKey: 'sk-canary-0123456789' } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai' },
      { path: '/v1/messages', provider: 'anthropic' },
      { path: '/refused/v1/chat/completions', provider: 'openai', url: `http://user:pw-canary-123@127.0.0.1:${refusedPort}/v1/chat/completions` },
      { path: '/refused/v1/messages', provider: 'anthropic', url: `http://127.0.0.1:${refusedPort}/v1/messages` },
      { path: '/reset/v1/chat/completions', provider: 'openai', url: `http://127.0.0.1:${resetPort}/v1/chat/completions` },
      { path: '/unresolved/v1/chat/completions', provider: 'openai', url: `http://${UNRESOLVED}/v1/chat/completions` },
      { path: '/unresolved/v1/messages', provider: 'anthropic', url: `http://${UNRESOLVED}/v1/messages` },
      { path: '/unresolved-retried/v1/chat/completions', provider: 'openai', url: `http://${UNRESOLVED}/v1/chat/completions`, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } },
      { path: '/unresolved-resumable/events', provider: 'passthrough', url: `http://${UNRESOLVED}/events`, resumable: true, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } },
      { path: '/unroutable/v1/chat/completions', provider: 'openai', url: `http://${UNROUTABLE}/v1/chat/completions` },
      { path: '/unroutable/v1/messages', provider: 'anthropic', url: `http://${UNROUTABLE}/v1/messages` },
    ],
  });
});
afterAll(async () => {
  plainAgent.createConnection = createConnection;
  await t.close();
  await new Promise<void>((resolve) => resetServer.close(() => resolve()));
});

async function call(path: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${t.gateway.url}${path}`, { signal: AbortSignal.timeout(10_000), ...init });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

const json = (body: unknown, extra: Record<string, string> = {}): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', ...extra }, body: JSON.stringify(body) });

describe('errors in the route’s own shape', () => {
  it('answers 404 under an Anthropic route in Anthropic’s shape', async () => {
    const r = await call('/v1/messages/batches', json({}));
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ type: 'error', error: { type: 'not_found_error', message: expect.stringContaining('no route for POST /v1/messages/batches'), code: 'ERR_TIDEGATE_NOT_FOUND' } });
  });

  it('answers 404 to a request carrying anthropic-version in Anthropic’s shape, wherever it goes', async () => {
    const r = await call('/v1/nothing', { headers: { 'anthropic-version': '2023-06-01' } });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('answers 404 to /playground saying how to serve it when it is off', async () => {
    const off = await startTestGateway({ config: { playground: { enabled: false } } });
    try {
      const res = await fetch(`${off.gateway.url}/playground`);
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain('no route for GET /playground');
      expect(body.error.message).toContain('playground.enabled: true, or the --playground flag');
    } finally {
      await off.close();
    }
  });

  it('answers 404 to a stream or response retrieve saying resume is off when no route has it', async () => {
    for (const path of ['/v1/streams/str_1', '/v1/responses/resp_1']) {
      const r = await call(path);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_NOT_FOUND', message: expect.stringContaining(`no route for GET ${path}`) } });
      expect((r.body.error as { message: string }).message).toContain('resume is off: set `resume: true` on');
    }
    // Any other unknown path keeps the plain 404.
    expect(((await call('/v1/nothing')).body.error as { message: string }).message).not.toContain('resume is off');
  });

  it('answers 404 under /v1/ in OpenAI’s shape, naming the routes', async () => {
    const r = await call('/v1/nothing');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: { message: expect.stringContaining('POST /v1/chat/completions'), type: 'tidegate_error', code: 'ERR_TIDEGATE_NOT_FOUND', param: null } });
  });

  it('the Anthropic SDK raises a 404 as NotFoundError with the gateway’s message', async () => {
    const client = new Anthropic({ baseURL: `${t.gateway.url}/nowhere`, apiKey: 'k', maxRetries: 0 });
    const err = await client.messages.create({ model: 'sim', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as Error).message).toContain('no route for POST /nowhere/v1/messages');
  });

  it('answers 405 with Allow on a route’s path in its provider’s shape', async () => {
    const anthropic = await call('/v1/messages');
    expect(anthropic.status).toBe(405);
    expect(anthropic.headers.get('allow')).toBe('POST');
    expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'ERR_TIDEGATE_METHOD_NOT_ALLOWED' } });
    const openai = await call('/v1/chat/completions');
    expect(openai.status).toBe(405);
    expect(openai.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_METHOD_NOT_ALLOWED', param: null } });
  });

  it('answers 400 for a body that is not JSON in Anthropic’s shape', async () => {
    const r = await call('/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'ERR_TIDEGATE_BAD_REQUEST' } });
  });

  it('answers 400, not 500, for a JSON body nested too deeply to forward, in each provider’s shape', async () => {
    // JSON.parse would read it; writing it out again for the upstream would overflow the stack.
    const body = '{"model":"m","messages":[{"role":"user","content":' + '['.repeat(20000) + ']'.repeat(20000) + '}]}';
    const openai = await call('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(openai.status).toBe(400);
    expect(openai.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_BODY_TOO_DEEP', message: expect.stringContaining('deeper than 512 levels') } });
    const anthropic = await call('/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(anthropic.status).toBe(400);
    expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'ERR_TIDEGATE_BODY_TOO_DEEP' } });
  });

  it('answers 415 for a body declared as another type, in each provider’s shape', async () => {
    const anthropic = await call('/v1/messages', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(anthropic.status).toBe(415);
    expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'ERR_TIDEGATE_UNSUPPORTED_MEDIA_TYPE' } });
    const openai = await call('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(openai.status).toBe(415);
    expect(openai.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UNSUPPORTED_MEDIA_TYPE' } });
  });
});

describe('an upstream that cannot be reached', () => {
  it.each([true, false])('is ERR_TIDEGATE_UPSTREAM_UNREACHABLE (502) with errno and reason in the log line (stream: %s)', async (stream) => {
    const r = await call('/refused/v1/chat/completions', json({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', message: 'upstream for route /refused/v1/chat/completions unreachable (ECONNREFUSED)' } });
    const line = t.logs.streams().at(-1) as Record<string, unknown>;
    expect(line).toMatchObject({ route: '/refused/v1/chat/completions', outcome: 'upstream_unreachable', errorCode: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', errno: 'ECONNREFUSED' });
    expect(line.errorDetail).toEqual(expect.stringContaining('ECONNREFUSED'));
    const logged = JSON.stringify(line);
    for (const secret of ['sk-canary-0123456789', 'pw-canary-123']) expect(logged).not.toContain(secret);
  });

  it('is reported in Anthropic’s shape on an Anthropic route', async () => {
    const r = await call('/refused/v1/messages', json({ model: 'm', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE' } });
  });

  it('stays ERR_TIDEGATE_UPSTREAM_RESET when the upstream connected and then reset', async () => {
    const r = await call('/reset/v1/chat/completions', json({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET' } });
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_reset', errno: 'ECONNRESET' });
  });

  it.each([
    ['a name that does not resolve', 'unresolved', 'ENOTFOUND'],
    ['no route to the host', 'unroutable', 'EHOSTUNREACH'],
  ])('is ERR_TIDEGATE_UPSTREAM_UNREACHABLE (502) for %s, in OpenAI’s shape', async (_, prefix, errno) => {
    const r = await call(`/${prefix}/v1/chat/completions`, json({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', message: `upstream for route /${prefix}/v1/chat/completions unreachable (${errno})` } });
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_unreachable', errorCode: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', errno, attempts: 1 });
  });

  it.each([
    ['a name that does not resolve', 'unresolved', 'ENOTFOUND'],
    ['no route to the host', 'unroutable', 'EHOSTUNREACH'],
  ])('is ERR_TIDEGATE_UPSTREAM_UNREACHABLE (502) for %s, in Anthropic’s shape', async (_, prefix, errno) => {
    const r = await call(`/${prefix}/v1/messages`, json({ model: 'm', max_tokens: 5, stream: false, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE' } });
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_unreachable', errno });
  });

  it('retries a name that does not resolve up to retry.maxAttempts, then answers 502', async () => {
    const r = await call('/unresolved-retried/v1/chat/completions', json({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE' } });
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_unreachable', errno: 'ENOTFOUND', attempts: 3 });
  });

  it('is ERR_TIDEGATE_UPSTREAM_UNREACHABLE (502) on a resumable route, after its attempts', async () => {
    const r = await call('/unresolved-resumable/events');
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', message: 'upstream for route /unresolved-resumable/events unreachable (ENOTFOUND)' } });
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_unreachable', errorCode: 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE', errno: 'ENOTFOUND' });
  });

  it('logs and counts every attempt on a resumable route, as on other routes', async () => {
    const metric = async (name: string, labels: string): Promise<number> => {
      const text = await (await fetch(`${t.gateway.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const route = 'route="/unresolved-resumable/events"';
    const requests = await metric('tidegate_upstream_requests_total', `${route},outcome="unreachable"`);
    const retries = await metric('tidegate_upstream_retries_total', route);
    expect((await call('/unresolved-resumable/events')).status).toBe(502);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_unreachable', attempts: 3 });
    expect((await metric('tidegate_upstream_requests_total', `${route},outcome="unreachable"`)) - requests).toBe(3);
    expect((await metric('tidegate_upstream_retries_total', route)) - retries).toBe(2);
  });
});
