import type http from 'node:http';
import zlib from 'node:zlib';
import type { Subscription } from '../../src/flow/types';
import { UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MAX_READ_BYTES, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES, openUpstreamStream } from '../../src/http/request';
import { listen } from '../harness/net';

type Server = Awaited<ReturnType<typeof listen>>;

const servers: Server[] = [];
const subscriptions: Subscription[] = [];

afterEach(async () => {
  for (const s of subscriptions.splice(0)) s.cancel();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = await listen(handler);
  servers.push(server);
  return `${server.url}/sse`;
}

/** Writes `frame` as fast as the socket takes it, until the client goes away (bounded: 64 MiB). */
function flood(res: http.ServerResponse, frame: Buffer): void {
  let written = 0;
  let closed = false;
  res.on('close', () => (closed = true));
  const pump = (): void => {
    while (!closed && written < 64 * 1024 * 1024) {
      written += frame.length;
      if (!res.write(frame)) return void res.once('drain', pump);
    }
  };
  pump();
}

const sse = (res: http.ServerResponse): void => void res.writeHead(200, { 'content-type': 'text/event-stream' });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `read` until it returns the same value twice 50 ms apart (at most 40 polls); that value. */
async function settled(read: () => number): Promise<number> {
  let last = read();
  for (let i = 0; i < 40; i++) {
    await sleep(50);
    const now = read();
    if (now === last && now > 0) return now;
    last = now;
  }
  return last;
}

describe('openUpstreamStream memory', () => {
  it('bufferedBytes() reports the bytes that arrived but were not requested', async () => {
    const url = await serve((_req, res) => {
      sse(res);
      res.write('data: ' + 'a'.repeat(2992) + '\n\n'); // 3000 bytes, below the high-water mark
    });
    const stream = await openUpstreamStream({ url, method: 'GET' });
    const sub = stream.body.subscribeWithDemand({ next: () => {}, error: () => {} });
    subscriptions.push(sub);
    expect(await settled(() => stream.bufferedBytes())).toBe(3000);
  });

  it('bufferedBytes() drops to 0 once the consumer has received the bytes', async () => {
    const url = await serve((_req, res) => {
      sse(res);
      res.write('data: ' + 'a'.repeat(2992) + '\n\n');
    });
    const stream = await openUpstreamStream({ url, method: 'GET' });
    let received = 0;
    const sub = stream.body.subscribeWithDemand({ next: (b: Buffer) => (received += b.length), error: () => {} });
    subscriptions.push(sub);
    await settled(() => stream.bufferedBytes());
    sub.request(Infinity);
    for (let i = 0; i < 40 && received < 3000; i++) await sleep(25);
    expect(received).toBe(3000);
    expect(stream.bufferedBytes()).toBe(0);
  });

  it('bufferedBytes() stays bounded while a fast upstream is not requested', async () => {
    const url = await serve((_req, res) => {
      sse(res);
      flood(res, Buffer.from(`data: ${'x'.repeat(10_000)}\n\n`));
    });
    const stream = await openUpstreamStream({ url, method: 'GET' });
    const sub = stream.body.subscribeWithDemand({ next: () => {}, error: () => {} });
    subscriptions.push(sub);
    sub.request(3);
    const held = await settled(() => stream.bufferedBytes());
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(UPSTREAM_HIGH_WATER_MARK + 2 * UPSTREAM_READ_BYTES);
  });

  it('hands out the response itself as the body (no extra PassThrough)', async () => {
    let serverRes: http.ServerResponse | undefined;
    const url = await serve((_req, res) => {
      serverRes = res;
      sse(res);
      res.write('data: a\n\n');
    });
    const stream = await openUpstreamStream({ url, method: 'GET' });
    expect(serverRes).toBeDefined();
    expect((stream.response.body as unknown as { constructor: { name: string } }).constructor.name).toBe('IncomingMessage');
    subscriptions.push(stream.body.subscribeWithDemand({ next: () => {}, error: () => {} }));
  });

  it("drops the response's header map once the body is handed out, still knowing its reads are sized and its headers", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-upstream': 'kept' });
      res.write('data: a\n\n');
    });
    const stream = await openUpstreamStream({ url, method: 'GET', readBytes: () => 4096 });
    const incoming = stream.response.body as unknown as http.IncomingMessage;
    expect(Object.keys(incoming.headers)).toEqual([]);
    expect(incoming.rawHeaders).toEqual([]);
    // The head was read before: node-fetch's copy and the call's own view of the encoding.
    expect(stream.response.headers.get('x-upstream')).toBe('kept');
    expect(stream.readsSized()).toBe(true);
    subscriptions.push(stream.body.subscribeWithDemand({ next: () => {}, error: () => {} }));
  });

  it('does not size the reads of a compressed body once its header map is dropped', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      res.write(zlib.gzipSync('data: zipped\n\n'));
    });
    const stream = await openUpstreamStream({ url, method: 'GET', readBytes: () => 4096 });
    expect(stream.readsSized()).toBe(false);
    subscriptions.push(stream.body.subscribeWithDemand({ next: () => {}, error: () => {} }));
  });

  it('still decodes a gzip body', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      res.end(zlib.gzipSync('data: zipped\n\n'));
    });
    const stream = await openUpstreamStream({ url, method: 'GET' });
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      subscriptions.push(stream.body.subscribeWithDemand({ next: (b: Buffer) => chunks.push(b), error: reject, complete: resolve }));
      subscriptions[subscriptions.length - 1].request(Infinity);
    });
    expect(Buffer.concat(chunks).toString()).toBe('data: zipped\n\n');
  });

  it('counts bytes that arrived but were not requested as meeting the first-byte deadline', async () => {
    const url = await serve((_req, res) => {
      sse(res);
      res.write('data: early\n\n');
    });
    const stream = await openUpstreamStream({ url, method: 'GET', firstByteTimeoutMs: 100 });
    const errors: unknown[] = [];
    const sub = stream.body.subscribeWithDemand({ next: () => {}, error: (e: unknown) => errors.push(e) });
    subscriptions.push(sub);
    await sleep(300);
    expect(errors).toEqual([]);
    expect(stream.bufferedBytes()).toBe('data: early\n\n'.length);
  });

  it('delivers every byte intact when many streams share the read buffer', async () => {
    const total = 512 * 1024;
    const content = (seed: number): Buffer => Buffer.from(Array.from({ length: total }, (_, i) => 97 + ((i * 7 + seed * 13) % 26)));
    const url = await serve((req, res) => {
      const body = content(Number(new URL(req.url ?? '/', 'http://x').searchParams.get('seed')));
      sse(res);
      let offset = 0;
      const pump = (): void => {
        while (offset < total) {
          const n = 1 + ((offset * 31) % 20_000); // uneven writes
          const ok = res.write(body.subarray(offset, offset + n));
          offset += n;
          if (!ok) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const seeds = Array.from({ length: 8 }, (_, i) => i);
    const results = await Promise.all(
      seeds.map(async (seed) => {
        const stream = await openUpstreamStream({ url: `${url}?seed=${seed}`, method: 'GET' });
        const parts: Buffer[] = [];
        await new Promise<void>((resolve, reject) => {
          // Demand one chunk at a time, sometimes a tick later, so reads interleave and pause.
          let sub: Subscription | undefined = undefined;
          const next = (b: Buffer): void => {
            parts.push(b);
            if (parts.length % 3 === 0) setImmediate(() => sub?.request(1));
            else sub?.request(1);
          };
          sub = stream.body.subscribeWithDemand({ next, error: reject, complete: resolve });
          subscriptions.push(sub);
          sub.request(1);
        });
        return Buffer.concat(parts).equals(content(seed));
      }),
    );
    expect(results).toEqual(seeds.map(() => true));
  });

  it.each([
    ['plain', false],
    ['gzip', true],
  ])('signals the abort reason to a %s body subscribed after the abort', async (_name, gzip) => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
      res.write(gzip ? zlib.gzipSync('data: a\n\n').subarray(0, 10) : 'data: a\n\n');
    });
    const controller = new AbortController();
    const stream = await openUpstreamStream({ url, method: 'GET', signal: controller.signal });
    const reason = new Error('client left');
    controller.abort(reason);
    const outcome = await new Promise<unknown>((resolve) => {
      const timer = setTimeout(() => resolve('no signal within 2 s'), 2000);
      const sub = stream.body.subscribeWithDemand({
        next: () => {},
        error: (e: unknown) => (clearTimeout(timer), resolve(e)),
        complete: () => (clearTimeout(timer), resolve('complete')),
      });
      subscriptions.push(sub);
      sub.request(Infinity);
    });
    expect(outcome).toBe(reason);
  });

  describe('readBytes', () => {
    /** A 2 MiB body in one write, read one chunk per request, a timer apart: the kernel holds plenty at each read. */
    async function chunkSizes(readBytes: (() => number) | undefined, calls?: { n: number }): Promise<{ sizes: number[]; intact: boolean }> {
      const body = Buffer.from(`data: ${'y'.repeat(2 * 1024 * 1024 - 8)}\n\n`);
      const url = await serve((_req, res) => {
        sse(res);
        res.end(body);
      });
      const stream = await openUpstreamStream({ url, method: 'GET', readBytes: readBytes && (() => ((calls && calls.n++), readBytes())) });
      const parts: Buffer[] = [];
      await new Promise<void>((resolve, reject) => {
        let sub: Subscription | undefined = undefined;
        sub = stream.body.subscribeWithDemand({ next: (b: Buffer) => (parts.push(b), void setTimeout(() => sub?.request(1), 1)), error: reject, complete: resolve });
        subscriptions.push(sub);
        sub.request(1);
      });
      return { sizes: parts.map((p) => p.length), intact: Buffer.concat(parts).equals(body) };
    }

    it('sizes each read of the body to what readBytes returns, rounded down to whole KiB', async () => {
      const { sizes, intact } = await chunkSizes(() => 5000);
      expect(intact).toBe(true);
      // The first read (status line, headers, body start) is sized before the call is known.
      expect(Math.max(...sizes.slice(1))).toBe(4096);
    });

    it('reads up to 64 KiB at once when readBytes allows it (more than the default read)', async () => {
      const { sizes, intact } = await chunkSizes(() => 1 << 30);
      expect(intact).toBe(true);
      expect(Math.max(...sizes)).toBeGreaterThan(UPSTREAM_READ_BYTES);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(UPSTREAM_MAX_READ_BYTES);
    });

    it('reads at least 1 KiB when readBytes has no room', async () => {
      const calls = { n: 0 };
      const { sizes, intact } = await chunkSizes(() => -5, calls);
      expect(intact).toBe(true);
      expect(calls.n).toBeGreaterThan(0);
      expect(Math.max(...sizes.slice(1))).toBe(UPSTREAM_MIN_READ_BYTES);
    });

    it('reads the default size without readBytes', async () => {
      const { sizes } = await chunkSizes(undefined);
      expect(Math.max(...sizes)).toBe(UPSTREAM_READ_BYTES);
    });
  });
});
