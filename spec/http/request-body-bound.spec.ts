import type http from 'node:http';
import { parseConfig, resolveRoutes } from '../../src/gateway/config';
import { MAX_ERROR_BODY_BYTES, UpstreamBodyTooLargeError, UpstreamHttpError, UpstreamNotStreamError } from '../../src/http/errors';
import { fetchUpstream, openUpstreamStream } from '../../src/http/request';
import { listen } from '../harness/net';

/** Whole upstream bodies are read up to a bound; past it the call fails typed and the socket is closed. */
describe('upstream body bounds', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  /** Resolves when the last request's socket closed. */
  let closed: Promise<void>;

  beforeAll(async () => {
    server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      closed = new Promise((resolve) => res.socket?.once('close', () => resolve()));
      const [, status, type, bytes] = (req.url ?? '').split('/');
      res.writeHead(Number(status), { 'content-type': decodeURIComponent(type ?? '') });
      res.end('x'.repeat(Number(bytes)));
    });
  });

  afterAll(() => server.close());

  const url = (status: number, type: string, bytes: number): string => `${server.url}/${status}/${encodeURIComponent(type)}/${bytes}`;
  const within = (p: Promise<void>, ms = 2000): Promise<void> => Promise.race([p, new Promise<void>((_, reject) => setTimeout(() => reject(new Error('socket still open')), ms).unref())]);

  it('a non-stream answer within maxBodyBytes is read whole', async () => {
    const answer = await fetchUpstream({ url: url(200, 'application/json', 3000), maxBodyBytes: 4096 });
    expect(answer.body.length).toBe(3000);
  });

  it('a non-stream answer over maxBodyBytes fails typed and closes the socket', async () => {
    const error = await fetchUpstream({ url: url(200, 'application/json', 100_000), maxBodyBytes: 4096, route: '/r' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBodyTooLargeError);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE', status: 502, upstreamStatus: 200, maxBytes: 4096 });
    expect((error as Error).message).toBe('upstream for route /r answered HTTP 200 with a body over 4096 bytes');
    await within(closed);
  });

  it('an error body up to 64 KiB is kept, a longer one fails typed', async () => {
    const small = await openUpstreamStream({ url: url(500, 'application/json', 10_000) }).catch((e: unknown) => e);
    expect(small).toBeInstanceOf(UpstreamHttpError);
    expect((small as UpstreamHttpError).body.length).toBe(10_000);
    const large = await openUpstreamStream({ url: url(500, 'application/json', MAX_ERROR_BODY_BYTES + 1) }).catch((e: unknown) => e);
    expect(large).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE', upstreamStatus: 500, maxBytes: MAX_ERROR_BODY_BYTES });
    await within(closed);
    const nonStream = await fetchUpstream({ url: url(503, 'application/json', MAX_ERROR_BODY_BYTES + 1) }).catch((e: unknown) => e);
    expect(nonStream).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE', upstreamStatus: 503 });
  });

  it('a 200 that is not an event stream fails typed without reading and closes the socket', async () => {
    const error = await openUpstreamStream({ url: url(200, 'text/plain', 1_000_000), route: '/r' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamNotStreamError);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_NOT_STREAM', status: 502, upstreamStatus: 200, contentType: 'text/plain' });
    await within(closed);
  });
});

describe('upstream.maxBodyBytes', () => {
  it('defaults to 8 MiB and reaches every route', () => {
    const config = parseConfig({});
    expect(config.upstream.maxBodyBytes).toBe(8 * 1024 * 1024);
    expect(resolveRoutes(parseConfig({ upstream: { maxBodyBytes: 65536 } }), 'http://127.0.0.1:1').map((r) => r.maxBodyBytes)).toEqual(Array(7).fill(65536));
  });

  it('rejects a value under 1024 or not an integer, naming the field', () => {
    expect(() => parseConfig({ upstream: { maxBodyBytes: 100 } })).toThrow(/upstream\.maxBodyBytes/);
    expect(() => parseConfig({ upstream: { maxBodyBytes: 'big' } })).toThrow(/upstream\.maxBodyBytes/);
  });
});
