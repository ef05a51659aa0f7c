/**
 * Sized upstream reads reuse one view per KiB size of ONE shared buffer (`readView`,
 * src/http/request.ts), for every socket. Every byte must arrive intact and in order
 * on every stream, whatever each call's `readBytes` says, with reads of many sockets interleaved.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Subscription } from '../../src/flow/types';
import { UPSTREAM_MAX_READ_BYTES, UPSTREAM_READ_BYTES, openUpstreamStream, type UpstreamStream } from '../../src/http/request';
import { listen } from '../harness/net';

type Server = Awaited<ReturnType<typeof listen>>;

const KIB = 1024;
const sha = (b: Buffer): string => crypto.createHash('sha256').update(b).digest('hex');

/** A deterministic body of `bytes` for stream `seed`: SSE-like lines, multi-byte UTF-8 and CRLF, pseudo-random bytes. */
function bodyFor(seed: number, bytes: number): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  let x = seed * 2654435761 + 1;
  const rnd = (): number => ((x = (x * 1103515245 + 12345) >>> 0), x);
  while (n < bytes) {
    const kind = rnd() % 3;
    const part =
      kind === 0
        ? Buffer.from(`data: s${seed} é€😀 ${n}\r\n\r\n`)
        : kind === 1
          ? crypto.createHash('sha256').update(`${seed}:${n}`).digest()
          : Buffer.from(`data: ${'€'.repeat(rnd() % 700)}\n\n`);
    parts.push(part);
    n += part.length;
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/** Writes `body` in odd-sized pieces, a macrotask apart, so that reads of many sockets interleave. */
function trickle(res: http.ServerResponse, body: Buffer, seed: number): void {
  let at = 0;
  let closed = false;
  res.on('close', () => (closed = true));
  const sizes = [1, 3, 1023, 1025, 4095, 7001, 65537, 2, 16 * KIB + 1, 513];
  let i = seed;
  const step = (): void => {
    if (closed) return;
    if (at >= body.length) return void res.end();
    const size = sizes[i++ % sizes.length] as number;
    const ok = res.write(body.subarray(at, at + size));
    at += size;
    if (ok) setImmediate(step);
    else res.once('drain', step);
  };
  step();
}

describe('sized reads share one buffer across sockets', () => {
  let server: Server;
  const bodies = new Map<string, Buffer>();
  const subscriptions: Subscription[] = [];
  const remotePorts: number[] = [];

  beforeAll(async () => {
    server = await listen((req, res) => {
      const path = req.url ?? '/';
      const body = bodies.get(path);
      remotePorts.push((req.socket as Socket).remotePort ?? 0);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      trickle(res, body, Number(path.replace(/\D/g, '')) || 1);
    });
  });
  afterEach(() => {
    for (const s of subscriptions.splice(0)) s.cancel();
  });
  afterAll(async () => {
    await server.close();
  });

  /** Reads the whole body, asking for one chunk at a time at a pace set by `seed` (sync, microtask, immediate, timer). */
  function readAll(stream: UpstreamStream, seed: number): Promise<{ body: Buffer; maxChunk: number }> {
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      let k = seed;
      let sub: Subscription | undefined = undefined;
      const again = (): void => {
        const mode = k++ % 4;
        if (mode === 0) sub?.request(1);
        else if (mode === 1) void Promise.resolve().then(() => sub?.request(1));
        else if (mode === 2) setImmediate(() => sub?.request(1));
        else setTimeout(() => sub?.request(1), 1);
      };
      sub = stream.body.subscribeWithDemand({
        next: (b: Buffer) => {
          // Kept as given, not copied: a chunk must stay valid after later reads (no view of the shared buffer).
          parts.push(b);
          again();
        },
        error: reject,
        complete: () => resolve({ body: Buffer.concat(parts), maxChunk: Math.max(0, ...parts.map((p) => p.length)) }),
      });
      subscriptions.push(sub);
      sub.request(1);
    });
  }

  const sizes: Array<[string, (unread: number) => number]> = [
    ['1 KiB', () => 1024],
    ['1 KiB - 1', () => 1023],
    ['1 KiB + 1', () => 1025],
    ['odd 4097', () => 4097],
    ['odd 7777', () => 7777],
    ['16 KiB', () => 16 * KIB],
    ['64 KiB - 1', () => 64 * KIB - 1],
    ['64 KiB', () => 64 * KIB],
    ['> 64 KiB', () => 200 * KIB],
    ['0', () => 0],
    ['negative', () => -4096],
    ['NaN', () => Number.NaN],
    ['Infinity', () => Infinity],
    ['-Infinity', () => -Infinity],
    ['fraction 2047.9', () => 2047.9],
    ['varies with unread bytes', (unread) => (unread % 3 === 0 ? 1024 : unread % 3 === 1 ? 33 * KIB + 5 : 64 * KIB)],
  ];

  it('delivers every byte intact and in order on 16 concurrent streams, each with its own readBytes', async () => {
    const streams = await Promise.all(
      sizes.map(async ([, readBytes], i) => {
        const path = `/s${i + 1}`;
        bodies.set(path, bodyFor(i + 1, 300 * KIB + i * 997));
        return { path, stream: await openUpstreamStream({ url: `${server.url}${path}`, readBytes }) };
      }),
    );
    const got = await Promise.all(streams.map(({ stream }, i) => readAll(stream, i)));
    const report = streams.map(({ path }, i) => `${sizes[i]?.[0]}: ${sha((got[i] as { body: Buffer }).body) === sha(bodies.get(path) as Buffer) ? 'ok' : 'CORRUPT'}`);
    expect(report).toEqual(sizes.map(([name]) => `${name}: ok`));
    for (const g of got) expect(g.maxChunk).toBeLessThanOrEqual(UPSTREAM_MAX_READ_BYTES);
  }, 30_000);

  it('keeps a kept-alive socket intact from a sized call to an unsized one and back (default read size again)', async () => {
    const order: Array<((u: number) => number) | undefined> = [() => 1025, undefined, () => 64 * KIB - 1, undefined, () => 3 * KIB];
    const before = remotePorts.length;
    const results: Array<{ ok: boolean; maxChunk: number }> = [];
    for (let i = 0; i < order.length; i++) {
      const path = `/k${100 + i}`;
      bodies.set(path, bodyFor(100 + i, 200 * KIB + 3 * i));
      const stream = await openUpstreamStream({ url: `${server.url}${path}`, readBytes: order[i] });
      const { body, maxChunk } = await readAll(stream, i);
      results.push({ ok: sha(body) === sha(bodies.get(path) as Buffer), maxChunk });
      // Let the socket go back to the pool before the next call.
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(results.map((r) => r.ok)).toEqual(order.map(() => true));
    // One socket served them all (keep-alive reuse actually happened).
    expect(new Set(remotePorts.slice(before)).size).toBe(1);
    // The unsized calls read at most the default size on the socket a sized call used before.
    expect(results[1]?.maxChunk).toBeLessThanOrEqual(UPSTREAM_READ_BYTES);
    expect(results[3]?.maxChunk).toBeLessThanOrEqual(UPSTREAM_READ_BYTES);
  }, 30_000);
});

/**
 * A consumer that says it holds no view of the body chunks (`bodyReleased`) gets later reads'
 * bodies in the buffer of a released chunk, of its own stream or another; a chunk still held is
 * never written over.
 */
describe('released body chunks are reused', () => {
  let server: Server;
  const bodies = new Map<string, Buffer>();
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    server = await listen((req, res) => {
      const body = bodies.get(req.url ?? '/');
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Large writes, so reads are as large as asked.
      let at = 0;
      const step = (): void => {
        while (at < body.length) {
          const ok = res.write(body.subarray(at, at + 256 * KIB));
          at += 256 * KIB;
          if (!ok) return void res.once('drain', step);
        }
        res.end();
      };
      step();
    });
  });
  afterEach(() => {
    for (const s of subscriptions.splice(0)) s.cancel();
  });
  afterAll(async () => {
    await server.close();
  });

  /**
   * Reads the whole body: each chunk (every `holdEvery`th one) is held for `holdTurns` turns of the
   * event loop before it is hashed and let go (0: hashed at once), the next read asked only then; `bodyReleased` is true only while none is held and
   * none is unread.
   */
  async function readHolding(path: string, holdTurns: number, holdEvery = 1): Promise<{ digest: string; large: number; buffers: Set<ArrayBufferLike> }> {
    const hash = crypto.createHash('sha256');
    const held: Buffer[] = [];
    const buffers = new Set<ArrayBufferLike>();
    let large = 0;
    let chunks = 0;
    // As the byte relay's budget: the call's unread chunks are held too.
    let unread: (() => number) | undefined;
    const stream = await openUpstreamStream({ url: `${server.url}${path}`, readBytes: () => 64 * KIB, bodyReleased: () => held.length === 0 && unread?.() === 0 });
    unread = stream.bufferedBytes;
    return new Promise((resolve, reject) => {
      let sub: Subscription | undefined = undefined;
      let complete = false;
      const finish = (): void => resolve({ digest: hash.digest('hex'), large, buffers });
      const letGo = (): void => {
        hash.update(held.shift() as Buffer);
        if (complete && held.length === 0) return finish();
        sub?.request(1);
      };
      sub = stream.body.subscribeWithDemand({
        next: (b: Buffer) => {
          if (b.length > 32 * KIB) {
            large++;
            buffers.add(b.buffer);
          }
          held.push(b);
          if (holdTurns === 0 || chunks++ % holdEvery !== 0) return letGo();
          let turns = holdTurns;
          const wait = (): void => void (--turns === 0 ? letGo() : setImmediate(wait));
          setImmediate(wait);
        },
        error: reject,
        complete: () => {
          complete = true;
          if (held.length === 0) finish();
        },
      });
      subscriptions.push(sub);
      sub.request(1);
    });
  }

  it('gives a released chunk buffer to the next read, every byte intact', async () => {
    bodies.set('/r1', bodyFor(7, 3 * 1024 * KIB));
    const got = await readHolding('/r1', 0);
    expect(got.digest).toBe(sha(bodies.get('/r1') as Buffer));
    // Many reads of over 32 KiB, in a few buffers.
    expect(got.large).toBeGreaterThan(10);
    expect(got.buffers.size).toBeLessThanOrEqual(3);
  }, 30_000);

  it('gives the buffers of chunks held across reads back once all are released, every byte intact', async () => {
    bodies.set('/r2', bodyFor(11, 3 * 1024 * KIB));
    const got = await readHolding('/r2', 2, 3);
    expect(got.digest).toBe(sha(bodies.get('/r2') as Buffer));
    // Every third chunk is still held when the next read is sized: its buffer comes back a read later.
    expect(got.large).toBeGreaterThan(10);
    expect(got.buffers.size).toBeLessThanOrEqual(3);
  }, 30_000);

  it('never writes over a chunk still held, with streams that hold and streams that release interleaved', async () => {
    const holds = [0, 1, 3, 0, 2, 5, 0, 1, 40, 0, 2, 0];
    holds.forEach((_, i) => bodies.set(`/h${i}`, bodyFor(40 + i, 1024 * KIB + i * 4099)));
    const got = await Promise.all(holds.map((h, i) => readHolding(`/h${i}`, h)));
    expect(got.map((g) => g.digest)).toEqual(holds.map((_, i) => sha(bodies.get(`/h${i}`) as Buffer)));
  }, 30_000);
});
