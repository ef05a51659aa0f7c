/**
 * An upstream may compress its body though asked for identity. gzip, zlib-wrapped deflate and
 * raw deflate (node-fetch tells the two deflate forms apart by peeking at the first chunk) all
 * arrive decoded, byte-exact, as a whole answer and as a stream.
 */
import type http from 'node:http';
import zlib from 'node:zlib';
import { fetchUpstream, openUpstreamStream } from '../../src/http/request';
import { listen } from '../harness/net';

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
