import http from 'node:http';
import zlib from 'node:zlib';
import type { RunningGateway } from '../../../src/gateway/server';
import type { CaptureTransport } from '../helpers';
import { RawClient, waitFor } from '../../harness/net';
import { clientEvents, post, rng, sampleBuffered, scriptedUpstream, sleep, SSE_HEAD, testGateway, type ScriptedUpstream, type Step } from '../../harness/relay-harness';

// The byte relay and the shared-buffer upstream reader over real sockets.

const CHARS = ['a', 'b', ' ', 'é', '日', '本', '😀', '"', '\\', ':'];

/** A deterministic LF-only, valid UTF-8 event stream of about `bytes` bytes (events 1 B .. 20 KB). */
function streamText(seed: number, bytes: number): Buffer {
  const r = rng(seed);
  const parts: string[] = [];
  let size = 0;
  for (let n = 0; size < bytes && n < 100_000; n++) {
    const len = r() < 0.1 ? Math.floor(r() * 20_000) : Math.floor(r() * 200);
    let data = `${seed}:${n}:`;
    for (let i = 0; i < len; i++) data += CHARS[Math.floor(r() * CHARS.length)];
    const kind = r();
    const block = kind < 0.05 ? `: comment ${n}\n` : kind < 0.1 ? `id: ${n}\n` : kind < 0.15 ? `event: e${n}\n` : '';
    const piece = `${block}data: ${data}\n${r() < 0.2 ? `data: second ${n}\n` : ''}\n`;
    parts.push(piece);
    size += Buffer.byteLength(piece);
  }
  return Buffer.from(parts.join(''));
}

/** The bytes cut into random writes (1 B .. 40 KB) with random pauses (0..3 ms), seeded. */
function randomSteps(seed: number, bytes: Buffer): Step[] {
  const r = rng(seed ^ 0x5a5a);
  const steps: Step[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = Math.max(1, Math.floor(r() < 0.3 ? r() * 16 : r() * 40_000));
    steps.push(bytes.subarray(at, at + n));
    at += n;
    if (r() < 0.3) steps.push(Math.floor(r() * 4));
  }
  return steps;
}

/** Reads a GET body with random pauses of the response (seeded), resolving the whole body. */
function slowGet(url: string, seed: number, agent: http.Agent | false = false): Promise<{ status: number; body: Buffer; complete: boolean }> {
  const r = rng(seed ^ 0x33);
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      const parts: Buffer[] = [];
      let reads = 0;
      res.on('data', (c: Buffer) => {
        parts.push(c);
        if (++reads % 7 === 0 && r() < 0.5) {
          res.pause();
          setTimeout(() => res.resume(), Math.floor(r() * 15));
        }
      });
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts), complete: res.complete }));
    });
    req.on('error', reject);
  });
}

describe('byte relay over real sockets', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  const clients: RawClient[] = [];

  beforeAll(async () => {
    up = await scriptedUpstream();
    ({ gw, logs } = await testGateway(
      up.url,
      [
        { path: '/pt', provider: 'passthrough', url: `${up.url}/pt` },
        { path: '/pt-events', provider: 'passthrough', url: `${up.url}/pt`, policy: { relay: 'events' } },
        { path: '/openai', provider: 'openai', url: `${up.url}/u`, forwardHeaders: ['content-type', 'x-script'] },
        { path: '/paused', provider: 'passthrough', url: `${up.url}/pt`, policy: { maxBufferedBytes: 64 * 1024, overflow: 'pause', stallTimeoutMs: 0 } },
      ],
      { heartbeatMs: 0 },
    ));
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  const script = (name: string, steps: (req: http.IncomingMessage) => Step[]): string => {
    up.scripts.set(`/pt/${name}`, (req) => steps(req));
    up.scripts.set(`/pt`, (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams.get('s') ?? '';
      const s = up.scripts.get(`/pt/${q}`);
      return s === undefined ? ['data: no script\n\n'] : s(req, res);
    });
    return `?s=${name}`;
  };

  it('40 concurrent streams, 3 passes over keep-alive sockets, random chunking and pauses on both sides: every client gets its upstream bytes exactly', async () => {
    const N = 40;
    const acceptedBefore = up.accepted;
    for (let pass = 0; pass < 3; pass++) {
      const expected: Buffer[] = [];
      const runs: Promise<{ status: number; body: Buffer; complete: boolean }>[] = [];
      for (let i = 0; i < N; i++) {
        const seed = pass * 1000 + i + 1;
        const text = streamText(seed, 20_000 + ((seed * 7919) % 300_000));
        expected.push(text);
        const q = script(`int-${seed}`, () => randomSteps(seed, text));
        runs.push(slowGet(`${gw.url}/pt${q}`, seed));
      }
      const results = await Promise.all(runs);
      for (let i = 0; i < N; i++) {
        const got = results[i] as { status: number; body: Buffer; complete: boolean };
        expect(got.status).toBe(200);
        expect(got.complete).toBe(true);
        // Byte-exact (the input is LF-only valid UTF-8 without a BOM, so nothing is normalised).
        if (!got.body.equals(expected[i] as Buffer)) {
          const a = got.body;
          const b = expected[i] as Buffer;
          let at = 0;
          while (at < a.length && a[at] === b[at]) at++;
          throw new Error(`stream ${pass}/${i}: ${a.length} bytes vs ${b.length} expected, first difference at ${at}: ${JSON.stringify(a.subarray(at, at + 40).toString())} vs ${JSON.stringify(b.subarray(at, at + 40).toString())}`);
        }
      }
    }
    // Keep-alive: later passes reused upstream sockets rather than opening N new ones each.
    expect(up.accepted - acceptedBefore).toBeLessThan(3 * N);
  });

  it('a pooled upstream socket that receives stray bytes while idle does not leak them into the next stream', async () => {
    // Stream 1 ends cleanly, then the upstream writes a whole fake response on the idle socket.
    const fake = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n11\r\ndata: SMUGGLED\n\n\r\n0\r\n\r\n');
    let socketOfFirst: import('node:net').Socket | undefined;
    const q1 = script('stray-1', () => ['data: first\n\n']);
    up.scripts.set('/pt/stray-1', (req) => {
      socketOfFirst = req.socket;
      return ['data: first\n\n'];
    });
    const r1 = await post(`${gw.url}/pt${q1}`, {}, '');
    expect(clientEvents(r1.body).map((e) => e.data)).toEqual(['first']);
    await sleep(20);
    socketOfFirst?.write(fake);
    await sleep(50);
    const q2 = script('stray-2', () => ['data: second\n\n']);
    const results = await Promise.all([1, 2, 3].map(() => post(`${gw.url}/pt${q2}`, {}, '')));
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(clientEvents(r.body).map((e) => e.data)).toEqual(['second']);
    }
  });

  it('a gzip-encoded upstream (Accept-Encoding ignored) is relayed decompressed and exact', async () => {
    const text = streamText(77, 200_000);
    up.scripts.set('/pt/gzip', (_req, res) => {
      res.writeHead(200, { ...SSE_HEAD, 'content-encoding': 'gzip' });
      const gz = zlib.createGzip({ flush: zlib.constants.Z_SYNC_FLUSH });
      gz.pipe(res);
      const steps = randomSteps(77, text);
      for (const s of steps) if (typeof s !== 'number') gz.write(s);
      gz.end();
      return undefined;
    });
    script('unused', () => []);
    const got = await slowGet(`${gw.url}/pt?s=gzip`, 77);
    expect(got.status).toBe(200);
    expect(got.body.equals(text)).toBe(true);
  });

  it('an upstream reset mid-frame: the complete events, then an error event; logged upstream_reset', async () => {
    const q = script('reset', () => ['data: one\n\ndata: two\n\ndata: thr', 20, { reset: true }]);
    const before = logs.streams().length;
    const r = await post(`${gw.url}/pt${q}`, {}, '');
    const events = clientEvents(r.body);
    expect(events.slice(0, 2).map((e) => e.data)).toEqual(['one', 'two']);
    expect(events[2]?.event).toBe('error');
    expect(events).toHaveLength(3);
    await waitFor(() => logs.streams().length > before, 5000);
    expect(logs.streams()[before]).toMatchObject({ outcome: 'upstream_reset' });
  });

  it('a client that disconnects mid-frame aborts the upstream response and is logged client_closed', async () => {
    const big = `data: ${'z'.repeat(100_000)}\n\n`;
    const q = script('client-gone', () => {
      const steps: Step[] = [];
      for (let i = 0; i < 400; i++) steps.push(big, 2);
      return steps;
    });
    const abortedBefore = up.aborted;
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/pt${q}`);
    clients.push(client);
    client.readAll();
    await waitFor(() => client.bytesRead > 150_000, 5000);
    client.destroy();
    await waitFor(() => up.aborted > abortedBefore, 5000);
    await waitFor(() => logs.streams().length > before, 5000);
    expect(logs.streams()[before]).toMatchObject({ outcome: 'client_closed' });
  });

  it('a gzip-encoded upstream and a reader that stops, with overflow: pause and a 64 KiB budget: never overflows, peak within the budget', async () => {
    const event = `data: ${'g'.repeat(4000)}\n\n`; // compresses ~100x: little on the wire, a lot once inflated
    // 120 MB inflated: more than the kernel's loopback buffers can take (tcp_rmem's maximum
    // reaches 32 MiB on some hosts), so the gateway must hold bytes while the reader is stopped.
    const count = 30_000;
    up.scripts.set('/pt/gzip-paused', (_req, res) => {
      res.writeHead(200, { ...SSE_HEAD, 'content-encoding': 'gzip' });
      const gz = zlib.createGzip({ flush: zlib.constants.Z_SYNC_FLUSH });
      gz.pipe(res);
      let i = 0;
      const more = (): void => {
        while (i < count) {
          i++;
          if (!gz.write(event)) return void gz.once('drain', more);
        }
        gz.end();
      };
      more();
      return undefined;
    });
    script('unused', () => []);
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, '/paused?s=gzip-paused');
    clients.push(client);
    client.readSome(1000);
    const held = await sampleBuffered(gw.url, 3000);
    client.readAll();
    expect(await client.waitClosed(30_000)).toBe(true);
    await waitFor(() => logs.streams().length > before, 5000);
    const line = logs.streams()[before] as Record<string, unknown>;
    expect({ outcome: line.outcome, errorCode: line.errorCode }).toEqual({ outcome: 'completed', errorCode: undefined });
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(64 * 1024);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(64 * 1024);
    expect(client.body()).toBe(event.repeat(count));
  });

  it.each([
    ['100 B events', 100],
    ['5 KB events', 5_000],
    ['11.9 KB events (just under a frame)', 11_900],
    ['13 KB events (over a frame)', 13_000],
  ])('a reader that stops, with overflow: pause and a 64 KiB budget (%s): never overflows, peak within the budget, resumes exactly', async (_n, eventBytes) => {
    const event = `data: ${'p'.repeat(eventBytes - 8)}\n\n`;
    // More than loopback's kernel buffers (several MB) can hold, so the gateway must park it.
    const count = Math.ceil((32 * 1024 * 1024) / eventBytes);
    const q = script(`paused-${eventBytes}`, () => {
      const steps: Step[] = [];
      const ten = event.repeat(10);
      for (let i = 0; i < count; i += 10) steps.push(i + 10 <= count ? ten : event.repeat(count - i));
      return steps;
    });
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/paused${q}`);
    clients.push(client);
    client.readSome(1000);
    // Hold still for a while: the gateway must park the upstream, not fill its budget past the limit.
    const held = await sampleBuffered(gw.url, 800);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(64 * 1024);
    expect(client.closed).toBe(false);
    client.readAll();
    expect(await client.waitClosed(20_000)).toBe(true);
    expect(client.body()).toBe(event.repeat(count));
    await waitFor(() => logs.streams().length > before, 5000);
    const line = logs.streams()[before] as Record<string, unknown>;
    expect(line.outcome).toBe('completed');
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(64 * 1024);
  });

  // While the client is not reading, the bridge is idle and the upstream side keeps filling (the
  // IncomingMessage up to its high-water mark + one 16 KiB read, the sseFrames queue); the logged
  // peak counts that because the relay observes the budget on every upstream read
  // (UpstreamRequest.onRead).
  it.each([
    ['1 KB events', 1_000],
    ['13 KB events', 13_000],
  ])('the logged peakBufferedBytes is at least what the stream was seen holding while paused (%s)', async (_n, eventBytes) => {
    const event = `data: ${'q'.repeat(eventBytes - 8)}\n\n`;
    const count = Math.ceil((32 * 1024 * 1024) / eventBytes);
    const q = script(`peak-${eventBytes}`, () => {
      const steps: Step[] = [];
      for (let i = 0; i < count; i++) steps.push(event);
      return steps;
    });
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/paused${q}`);
    clients.push(client);
    client.readSome(1000);
    const held = await sampleBuffered(gw.url, 800);
    client.readAll();
    expect(await client.waitClosed(20_000)).toBe(true);
    await waitFor(() => logs.streams().length > before, 5000);
    const line = logs.streams()[before] as Record<string, unknown>;
    expect(line.outcome).toBe('completed');
    expect(line.peakBufferedBytes as number).toBeGreaterThanOrEqual(held);
  });
});
