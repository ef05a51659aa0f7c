import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { appendUpstreamPath } from '../../src/gateway/config/routes';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

describe('upstream.url with a path prefix and a query', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  const seen: string[] = [];
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`.trimEnd());
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[]}');
    });
  });
  afterAll(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.close()));
    await upstream.close();
  });

  /** Starts a gateway on `upstreamUrl` (a function of the echo server's origin) and returns what the echo server saw for GET /v1/models. */
  async function relayedRequestLine(upstreamUrl: (origin: string) => string, routes?: unknown[]): Promise<string> {
    const config = parseConfig({ port: 0, upstream: { url: upstreamUrl(upstream.url) }, ...(routes ? { routes } : {}) });
    const gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
    gateways.push(gw);
    seen.length = 0;
    const res = await fetch(`${gw.url}/v1/models`);
    expect(res.status).toBe(200);
    await res.text();
    expect(seen).toHaveLength(1);
    return seen[0];
  }

  it('appends the route path to the base path and keeps the base query (Azure-style ?api-version=)', async () => {
    expect(await relayedRequestLine((o) => `${o}/base?api-version=1`)).toBe('GET /base/v1/models?api-version=1');
  });

  it('keeps the query of a base URL without a path', async () => {
    expect(await relayedRequestLine((o) => `${o}?api-version=1`)).toBe('GET /v1/models?api-version=1');
  });

  it('keeps the userinfo as Basic credentials along with prefix and query', async () => {
    const line = await relayedRequestLine((o) => o.replace('http://', 'http://u:p@') + '/base?api-version=2024-01-01');
    expect(line).toBe(`GET /base/v1/models?api-version=2024-01-01 Basic ${Buffer.from('u:p').toString('base64')}`);
  });

  it('appends to a prefix with or without a trailing slash alike', async () => {
    expect(await relayedRequestLine((o) => `${o}/base/`)).toBe('GET /base/v1/models');
    expect(await relayedRequestLine((o) => `${o}/base`)).toBe('GET /base/v1/models');
  });

  it("merges an upstreamPath's own query with the base's, the route's value winning for a shared name", async () => {
    const routes = [{ path: '/v1/models', provider: 'openai', upstreamPath: '/v1/models?api-version=2&tag=x' }];
    expect(await relayedRequestLine((o) => `${o}/base?api-version=1&key=k`, routes)).toBe('GET /base/v1/models?key=k&api-version=2&tag=x');
  });
});

describe('appendUpstreamPath', () => {
  it('appends to the path, never resolving against it', () => {
    expect(appendUpstreamPath('http://h/a/b?v=1', '/v1/chat/completions')).toBe('http://h/a/b/v1/chat/completions?v=1');
    expect(appendUpstreamPath('http://h', '/v1/messages')).toBe('http://h/v1/messages');
  });
});
