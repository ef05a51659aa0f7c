/**
 * An upstream may compress its body though asked for identity. gzip, zlib-wrapped deflate and
 * raw deflate (node-fetch tells the two deflate forms apart by peeking at the first chunk) all
 * arrive decoded, byte-exact, as a whole answer and as a stream.
 */
import type http from 'node:http';
import zlib from 'node:zlib';
import { UpstreamEncodingError, UpstreamHttpError } from '../../src/http/errors';
import { fetchUpstream, openUpstreamStream } from '../../src/http/request';
import { listen, waitFor } from '../harness/net';

const plain = Buffer.from(Array.from({ length: 400 }, (_, i) => `data: {"n":${i},"t":"é€😀"}\n\n`).join(''));
const encodings: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  'raw deflate': (b) => zlib.deflateRawSync(b),
};

describe('an upstream body with a Content-Encoding', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      const [, kind, name] = (req.url ?? '').split('/').map(decodeURIComponent);
      const body = encodings[name](plain);
      res.writeHead(200, { 'content-type': kind === 'stream' ? 'text/event-stream' : 'application/json', 'content-encoding': name === 'gzip' ? 'gzip' : 'deflate' });
      // In pieces a tick apart: the first read holds only the start of the encoded body.
      let at = 0;
      const next = (): void => {
        if (at >= body.length) return void res.end();
        res.write(body.subarray(at, (at += 200)));
        setImmediate(next);
      };
      next();
    });
  });
  afterAll(() => upstream.close());

  it.each(Object.keys(encodings))('%s arrives decoded as a whole answer', async (name) => {
    const answer = await fetchUpstream({ url: `${upstream.url}/whole/${encodeURIComponent(name)}`, maxBodyBytes: 1 << 20 });
    expect(answer.status).toBe(200);
    expect(answer.body.equals(plain)).toBe(true);
  });

  it.each(Object.keys(encodings))('%s arrives decoded as a stream', async (name) => {
    const stream = await openUpstreamStream({ url: `${upstream.url}/stream/${encodeURIComponent(name)}` });
    const body = await new Promise<Buffer>((resolve, reject) => {
      const parts: Buffer[] = [];
      const sub = stream.body.subscribeWithDemand({
        next: (b: Buffer) => {
          parts.push(Buffer.from(b));
          sub.request(1);
        },
        error: reject,
        complete: () => resolve(Buffer.concat(parts)),
      });
      sub.request(1);
    });
    expect(body.equals(plain)).toBe(true);
  });
});

/**
 * A coding is read as RFC 9110 §8.4 reads it: case-insensitive, in a list, `identity` naming
 * none. One of gzip or deflate, spelled any way, is decoded; any other coding (br too: its
 * decoder's window is outside the budget), or a stack of several, is refused instead of being read
 * as identity.
 */
describe('an upstream body in a coding the call does not decode', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  /** Sockets of answers whose connection closed. */
  let closed = 0;
  const refused = ['zstd', 'x-foo', 'gzip, zstd', 'gzip, gzip', 'br'];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      const [, kind, status, coding] = (req.url ?? '').split('/').map(decodeURIComponent);
      res.socket?.once('close', () => closed++);
      const lower = coding.replace(/[ ,]|identity/gi, '').replace(/^x-/i, '').toLowerCase();
      const encode = lower === 'gzip' ? zlib.gzipSync : lower === 'deflate' ? zlib.deflateSync : lower === 'br' ? zlib.brotliCompressSync : (b: Buffer) => b;
      res.writeHead(Number(status), { 'content-type': kind === 'stream' && status === '200' ? 'text/event-stream' : 'application/json', 'content-encoding': coding, 'retry-after': '1' });
      res.end(encode(plain));
    });
  });
  afterAll(() => upstream.close());

  const url = (kind: string, status: number, coding: string): string => `${upstream.url}/${kind}/${status}/${encodeURIComponent(coding)}`;

  it.each(refused)('refuses a 200 whole answer in %s, its body unread and its connection closed', async (coding) => {
    const before = closed;
    const error = await fetchUpstream({ url: url('whole', 200, coding), route: '/v1/x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamEncodingError);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_ENCODING', status: 502, upstreamStatus: 200, contentEncoding: coding });
    await waitFor(() => closed > before);
  });

  it.each(refused)('refuses a 200 stream in %s before its body is read', async (coding) => {
    const error = await openUpstreamStream({ url: url('stream', 200, coding) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamEncodingError);
    expect((error as Error).message).toMatch(/^upstream answered HTTP 200 with .*, which the gateway does not decode \(it asked for identity\)$/);
  });

  it.each(refused)('keeps the status and Retry-After of an error answer in %s, without its body', async (coding) => {
    for (const kind of ['whole', 'stream']) {
      const call = kind === 'whole' ? fetchUpstream({ url: url(kind, 429, coding) }) : openUpstreamStream({ url: url(kind, 429, coding) });
      const error = await call.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamHttpError);
      expect(error).toMatchObject({ status: 429, body: '', retryAfterMs: 1000 });
    }
  });

  it('decodes gzip and deflate whatever their case, with identity and empty elements in the list', async () => {
    for (const coding of ['GZIP', 'identity, x-gzip', 'Deflate,', 'IDENTITY']) {
      const answer = await fetchUpstream({ url: url('whole', 200, coding), maxBodyBytes: 1 << 20 });
      expect(answer.body.equals(plain)).toBe(true);
    }
  });
});
