import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

// Node drops every byte written to a HEAD response: a relayed HEAD would read its upstream with no
// reader to push back. Every path that relays or replays a stream answers HEAD with 405 and asks
// the upstream nothing.

describe('HEAD on relayed paths', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // An endless stream: only backpressure or the client's leaving stops it.
      const timer = setInterval(() => res.write(`data: ${'x'.repeat(1000)}\n\n`), 1);
      res.on('close', () => clearInterval(timer));
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: `${upstream.url}/v1` },
      routes: [
        { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, resume: true },
        { path: '/v1/models', provider: 'openai' },
        { path: '/v1/responses', provider: 'openai', resume: true },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  function head(path: string): Promise<{ status: number; allow: string | undefined; bytes: number }> {
    return new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const req = http.request({ method: 'HEAD', host: u.hostname, port: u.port, path, agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, bytes }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it.each([
    ['/events', 'GET, POST'],
    ['/events?x=1', 'GET, POST'],
    ['/v1/models', 'GET'],
    ['/v1/models/some-model', 'GET'],
    ['/v1/streams/abc', 'GET'],
    ['/v1/responses/resp_abc', 'GET'],
  ])('HEAD %s answers 405 with Allow %s and never reaches the upstream', async (path, allow) => {
    seen.length = 0;
    const got = await head(path);
    expect(got).toEqual({ status: 405, allow, bytes: 0 });
    // Long enough for a relayed stream to have asked the upstream.
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([]);
  });

  it('still relays GET on the same path', async () => {
    seen.length = 0;
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
