import { TimeoutError } from '../../src/errors';
import { openUpstreamStream } from '../../src/http/request';
import { blackHole } from '../harness/black-hole';

describe('openUpstreamStream connect timeout', () => {
  it('rejects with TimeoutError kind connect when the connection is not established in time', async () => {
    const hole = await blackHole();
    try {
      const started = Date.now();
      const error = await openUpstreamStream({ url: `http://127.0.0.1:${hole.port}/sse`, method: 'GET', connectTimeoutMs: 300, firstByteTimeoutMs: 10_000 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).kind).toBe('connect');
      // It is the connect timer (300 ms) that fired, not the first-byte one (10 s).
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      hole.close();
    }
  });
});

describe('openUpstreamStream with an invalid URL', () => {
  it('fails with the URL parser’s error, every time (a checked URL is not parsed again)', async () => {
    for (let i = 0; i < 2; i++) {
      const error = await openUpstreamStream({ url: 'not a url', method: 'GET', route: '/r' }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect((error as { code?: string }).code).toBe('ERR_TIDEGATE_UPSTREAM_RESET');
      expect((error as Error).message).toBe('upstream for route /r connection failed (ERR_INVALID_URL)');
    }
  });
});

describe('openUpstreamStream request headers', () => {
  it('sends accept and accept-encoding: identity under the request’s own headers, which win', async () => {
    const seen: import('node:http').IncomingHttpHeaders[] = [];
    const raw: string[][] = [];
    const server = (await import('node:http')).createServer((req, res) => {
      seen.push(req.headers);
      raw.push(req.rawHeaders);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: x\n\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as import('node:net').AddressInfo;
    try {
      const url = `http://127.0.0.1:${port}/sse`;
      // An own `__proto__` key (as JSON.parse makes one) is a header name like any other.
      for (const json of ['{"x-one":"1","authorization":"Bearer k"}', '{"accept":"text/plain","accept-encoding":"gzip","__proto__":"p"}']) {
        const up = await openUpstreamStream({ url, method: 'GET', headers: JSON.parse(json) as Record<string, string> });
        up.body.subscribe({ error: () => undefined });
      }
      expect(seen[0]).toMatchObject({ accept: 'text/event-stream', 'accept-encoding': 'identity', 'x-one': '1', authorization: 'Bearer k' });
      expect(seen[1]).toMatchObject({ accept: 'text/plain', 'accept-encoding': 'gzip' });
      expect(raw[1]).toEqual(expect.arrayContaining(['__proto__', 'p']));
    } finally {
      server.close();
    }
  });
});
