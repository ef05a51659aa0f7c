import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport, parsePrometheus, startTestGateway, type TestGateway } from './helpers';

const CHUNK = (text: string): string =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })}\n\n`;

/** What the scripted upstream does for the n-th request (0-based). */
type Step = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** An upstream that plays `steps` in order, one per request, and counts requests. */
async function scriptedUpstream(steps: Step[]): Promise<{ url: string; requests: () => number; seen: { body: string; authorization: string | undefined }[]; close(): Promise<void> }> {
  let n = 0;
  const seen: { body: string; authorization: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ body, authorization: req.headers.authorization });
      (steps[Math.min(n++, steps.length - 1)] as Step)(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Step => (_req, res) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const stream = (texts: string[], end: 'done' | 'reset'): Step => (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const t of texts) res.write(CHUNK(t));
  if (end === 'done') res.end('data: [DONE]\n\n');
  else setTimeout(() => res.socket?.resetAndDestroy(), 50);
};

async function gatewayFor(upstreamUrl: string, logs: CaptureTransport): Promise<RunningGateway> {
  const config = parseConfig({ port: 0, upstream: { url: upstreamUrl, apiKey: 'sk-upstream' }, retry: { baseDelayMs: 10 }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
  return startGateway(config, { logger: createLogger({ transports: [logs] }) });
}

async function post(url: string): Promise<{ status: number; body: string; contentType: string | null }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [] }),
  });
  return { status: res.status, body: await res.text(), contentType: res.headers.get('content-type') };
}

describe('gateway retries', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function setup(steps: Step[]): Promise<{ gw: RunningGateway; requests: () => number; seen: { body: string; authorization: string | undefined }[]; logs: CaptureTransport }> {
    const up = await scriptedUpstream(steps);
    const logs = new CaptureTransport();
    const gw = await gatewayFor(up.url, logs);
    closers.push(up.close, () => gw.close());
    return { gw, requests: up.requests, seen: up.seen, logs };
  }

  it('sends the same body and credential on every attempt, and still writes an error frame after the answer', async () => {
    const { gw, seen } = await setup([json(503, { error: { message: 'busy' } }), json(503, { error: { message: 'busy' } }), stream(['a'], 'reset')]);
    const res = await post(gw.url);
    expect(res.status).toBe(200);
    const sent = JSON.stringify({ model: 'm', stream: true, messages: [] });
    expect(seen).toEqual([0, 1, 2].map(() => ({ body: sent, authorization: 'Bearer sk-upstream' })));
    expect(res.body.startsWith(CHUNK('a'))).toBe(true);
    expect(res.body).toContain('"error"');
    expect(res.body).not.toContain('sk-upstream');
  });

  it('retries a 429 once after its Retry-After and relays one clean stream', async () => {
    const { gw, requests } = await setup([json(429, { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }, { 'retry-after': '1' }), stream(['a', 'b'], 'done')]);
    const started = Date.now();
    const res = await post(gw.url);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // Retry-After: 1 honoured
    expect(requests()).toBe(2);
    expect(res.status).toBe(200);
    expect(res.body).toBe(`${CHUNK('a')}${CHUNK('b')}data: [DONE]\n\n`);
    const metrics = parsePrometheus(await (await fetch(`${gw.url}/metrics`)).text());
    expect(metrics.get('tidegate_upstream_retries_total{route="/v1/chat/completions",reason="http_429"}')).toBe(1);
  });

  it('passes a 400 through with the upstream JSON and does not retry', async () => {
    const body = { error: { message: 'bad model', type: 'invalid_request_error', param: 'model', code: null } };
    const { gw, requests } = await setup([json(400, body), stream(['never'], 'done')]);
    const res = await post(gw.url);
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toEqual(body);
    expect(requests()).toBe(1);
  });

  it("passes a 405 through with the upstream's Allow, which a 405 must carry", async () => {
    const { gw } = await setup([json(405, { error: { message: 'use GET', type: 'invalid_request_error', code: null } }, { allow: 'GET, HEAD' })]);
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [] }) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(JSON.parse(await res.text())).toEqual({ error: { message: 'use GET', type: 'invalid_request_error', code: null } });
  });

  it('relays no Allow with an upstream error other than 405', async () => {
    const { gw } = await setup([json(400, { error: { message: 'bad', type: 'invalid_request_error', code: null } }, { allow: 'GET' })]);
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [] }) });
    expect(res.status).toBe(400);
    expect(res.headers.get('allow')).toBeNull();
    await res.text();
  });

  it('gives up after maxAttempts on a persistent 503 and passes the last one through', async () => {
    const { gw, requests } = await setup([json(503, { error: { message: 'busy', type: 'server_error', code: null } })]);
    const res = await post(gw.url);
    expect(res.status).toBe(503);
    expect(requests()).toBe(3);
  });

  it('never retries once the first byte reached the client: a reset mid-stream becomes an error event', async () => {
    const { gw, requests, logs } = await setup([stream(['a', 'b'], 'reset'), stream(['retried'], 'done')]);
    const res = await post(gw.url);
    expect(res.status).toBe(200);
    expect(res.body.startsWith(`${CHUNK('a')}${CHUNK('b')}`)).toBe(true);
    const last = res.body.trimEnd().split('\n\n').at(-1) as string;
    expect(JSON.parse(last.replace(/^data: /, ''))).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET' } });
    expect(res.body).not.toContain('retried');
    expect(requests()).toBe(1);
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_reset', errorCode: 'ERR_TIDEGATE_UPSTREAM_RESET', attempts: 1 });
  });
});

describe('gateway upstream failures (simulator)', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({
      routes: [
        { path: '/v1/chat/completions', provider: 'openai', forwardHeaders: ['content-type', 'x-sim-fault', 'x-sim-fault-after'] },
        { path: '/v1/messages', provider: 'anthropic', forwardHeaders: ['content-type', 'x-sim-fault', 'x-sim-fault-after'] },
      ],
    });
  });
  afterAll(() => t.close());

  async function raw(path: string, fault: string, body: unknown): Promise<string> {
    const res = await fetch(`${t.gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': fault },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return res.text();
  }

  it('turns an upstream reset mid-stream into an error event (Anthropic) and logs outcome upstream_reset', async () => {
    const text = await raw('/v1/messages', 'reset', { model: 'sim', max_tokens: 100, stream: true, messages: [] });
    expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"[^"]*","code":"ERR_TIDEGATE_UPSTREAM_RESET"\}\}\n\n$/);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/messages', outcome: 'upstream_reset', errorCode: 'ERR_TIDEGATE_UPSTREAM_RESET' });
  });

  it('reports an upstream that ends without [DONE] as ERR_TIDEGATE_UPSTREAM_TRUNCATED', async () => {
    const text = await raw('/v1/chat/completions', 'truncate', { model: 'sim', stream: true, messages: [] });
    const last = JSON.parse((text.trimEnd().split('\n\n').at(-1) as string).replace(/^data: /, '')) as { error: { code: string; type: string; message: string } };
    expect(last.error.code).toBe('ERR_TIDEGATE_UPSTREAM_TRUNCATED');
    expect(text).not.toContain('[DONE]');
  });

  it('writes the error in OpenAI shape data: {"error":{message,type,code}} on the OpenAI route', async () => {
    const text = await raw('/v1/chat/completions', 'error-midstream', { model: 'sim', stream: true, messages: [] });
    const last = text.trimEnd().split('\n\n').at(-1) as string;
    expect(last.startsWith('data: {"error":')).toBe(true);
    expect(JSON.parse(last.slice(6))).toEqual({
      error: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null, param: null },
    });
  });

  it('passes an upstream HTTP error status and JSON through before the stream starts', async () => {
    const res = await fetch(`${t.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': 'status:401' },
      body: JSON.stringify({ model: 'sim', max_tokens: 10, stream: true, messages: [] }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });
});
