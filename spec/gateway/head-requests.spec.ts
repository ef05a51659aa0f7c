import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

// RFC 9110 §9.3.2: HEAD where GET is served. A whole-answer GET (a provider route's JSON) answers
// HEAD with that GET's status and headers and no body. Node drops every byte written to a HEAD
// response, so on a path that relays or replays a stream a HEAD would read the stream with no
// reader to push back: those paths answer 405 with Allow and ask the upstream nothing.

describe('HEAD requests', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(`${req.method} ${req.url}`);
      if (req.url === '/v1/models' || req.url === '/v1/models/known') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'known', object: 'model' }] }));
        return;
      }
      if (req.url?.startsWith('/v1/models/')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'no such model', type: 'invalid_request_error', code: 'model_not_found' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // An endless stream: only backpressure or the client's leaving stops it.
      const timer = setInterval(() => res.write(`data: ${'x'.repeat(1000)}\n\n`), 1);
      res.on('close', () => clearInterval(timer));
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: upstream.url },
      routes: [
        { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, resume: true },
        { path: '/v1/models', provider: 'openai' },
        { path: '/v1/responses', provider: 'openai', resume: true },
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/both', provider: 'openai', methods: ['GET', 'POST'] },
      ],
      debug: { streams: true },
    });
    logs = new CaptureTransport();
    gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });
  beforeEach(() => {
    seen.length = 0;
  });

  interface Answer {
    status: number;
    headers: http.IncomingHttpHeaders;
    bytes: number;
  }

  function ask(method: string, path: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const req = http.request({ method, host: u.hostname, port: u.port, path, agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** The headers a HEAD must share with its GET (`date` and the like may differ). */
  const head = ({ headers }: Answer): Record<string, unknown> => ({ 'content-type': headers['content-type'], 'content-length': headers['content-length'], connection: headers.connection });

  it.each(['/v1/models', '/v1/models/known', '/v1/models/unknown'])('HEAD %s answers with the GET status and headers, no body', async (path) => {
    const get = await ask('GET', path);
    const got = await ask('HEAD', path);
    expect(got.status).toBe(get.status);
    expect(head(got)).toEqual(head(get));
    expect(get.headers['content-length']).toBe(String(get.bytes));
    expect(got.bytes).toBe(0);
    // Both asked the upstream with a GET.
    expect(seen).toEqual([`GET ${path}`, `GET ${path}`]);
  });

  it('logs a HEAD whole answer with no bytes sent', async () => {
    await ask('HEAD', '/v1/models');
    expect(logs.streams().at(-1)).toMatchObject({ method: 'HEAD', outcome: 'completed', status: 200, bytes: 0 });
  });

  it.each([
    ['/events', 'GET, POST'],
    ['/events?x=1', 'GET, POST'],
    ['/v1/streams/abc', 'GET'],
    ['/v1/responses/resp_abc', 'GET'],
  ])('HEAD %s streams or replays: 405 with Allow %s, the upstream never asked', async (path, allow) => {
    const got = await ask('HEAD', path);
    expect({ status: got.status, allow: got.headers.allow, bytes: got.bytes }).toEqual({ status: 405, allow, bytes: 0 });
    // Long enough for a relayed stream to have asked the upstream.
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([]);
  });

  it.each([
    ['POST', '/v1/models', 'GET, HEAD'],
    ['DELETE', '/v1/models/known', 'GET, HEAD'],
    ['PUT', '/both', 'GET, HEAD, POST'],
    ['GET', '/v1/chat/completions', 'POST'],
    ['HEAD', '/v1/chat/completions', 'POST'],
    ['PUT', '/events', 'GET, POST'],
    ['POST', '/v1/streams/abc', 'GET'],
    ['DELETE', '/v1/responses/resp_abc', 'GET'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['POST', '/readyz', 'GET, HEAD'],
    ['POST', '/metrics', 'GET, HEAD'],
    ['POST', '/debug/streams', 'GET, HEAD'],
  ])('%s %s: 405 with Allow %s', async (method, path, allow) => {
    const got = await ask(method, path);
    expect(got.status).toBe(405);
    expect(got.headers.allow).toBe(allow);
  });

  it.each(['/v1/models', '/v1/models/known', '/healthz', '/readyz', '/metrics', '/debug/streams'])('HEAD %s, listed in a 405 there, is answered', async (path) => {
    const got = await ask('HEAD', path);
    expect(got.status).toBe(200);
    expect(got.headers.allow).toBeUndefined();
  });

  it('still relays GET on a streaming path', async () => {
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/events`, { signal: ac.signal });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value as Uint8Array).toString()).toContain('data: x');
    ac.abort();
    await reader.cancel().catch(() => undefined);
    expect(seen).toEqual(['GET /sse']);
  });
});
