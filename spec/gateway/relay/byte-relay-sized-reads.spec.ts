/**
 * The byte relay's upstream reads sized to the budget's free room:
 * every userland byte within `maxBufferedBytes` under `overflow: pause`, no hang, exact bytes out.
 */
import type http from 'node:http';
import zlib from 'node:zlib';

import { RawClient, waitFor } from '../../harness/net';
import { sampleBuffered, type Step, useRelayHarness } from '../../harness/relay-harness';

const KIB = 1024;
// Smallest budget with the byte relay on: client writableHighWaterMark 16 KiB + 6 KiB slack + 8 KiB room.
const MIN_BYTES_BUDGET = 16 * KIB + 6 * KIB + 8 * KIB;

describe('byte relay reads sized to the budget', () => {
  const h = useRelayHarness(() => {
    const routes = [route('/gz', 64 * KIB), route('/min', MIN_BYTES_BUDGET), route('/utf', MIN_BYTES_BUDGET), route('/many', 40 * KIB), route('/b64', 64 * KIB), route('/gz48', 48 * KIB), route('/gzmin', MIN_BYTES_BUDGET), route('/mixed', 64 * KIB), route('/jerky', 64 * KIB), route('/huge', 64 * KIB), route('/huge-min', MIN_BYTES_BUDGET)];
    return routes;
  });
  const { clients } = h;
  const route = (path: string, budget: number): Record<string, unknown> => ({ path, provider: 'passthrough', url: `${h.up.url}${path}`, policy: { maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 } });

  /** Opens `path`, reads 1000 B, stays paused for `pauseMs` (sampling the gauge), then reads all. */
  async function pausedRun(path: string, pauseMs = 800): Promise<{ line: Record<string, unknown>; gauge: number; body: string }> {
    const before = h.logs.streams().length;
    const client = await RawClient.request(h.gw.port, path);
    clients.push(client);
    client.readSome(1000);
    const gauge = await sampleBuffered(h.gw.url, pauseMs);
    client.readAll();
    expect(await client.waitClosed(15_000)).toBe(true);
    // This route's line (an earlier test's stream may log late, when its client is destroyed).
    const mine = (): Record<string, unknown> | undefined => (h.logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === path);
    await waitFor(() => mine() !== undefined, 5000);
    return { line: mine() as Record<string, unknown>, gauge, body: client.body() };
  }

  // At 48 KiB a gzip stream (unsized reads: room = 6 KiB − bridge bytes) must not park after
  // ~16 KB with the client reading, the bridge empty and the reader holding ~22 KB: bytes that
  // leave res.writableLength after a write() that returned true (no 'drain') call nothing, so the
  // ReadGate is poked again from the write's completion while it holds a request.
  // At the smallest byte-relay budget (30720) a gzip body must not end with ERR_TIDEGATE_OVERFLOW
  // at its first frame ("exceeded by an element of 8000 bytes"), whatever the client does (https
  // upstreams the same: spec/e2e/https-upstream-reads.spec.ts): an unsized reader (zlib, TLS)
  // takes up to UNSIZED_READER_BYTES (36 KiB) unasked, so the byte relay needs room for that plus
  // a frame, or the stream falls back to relaying events.
  it.each([
    ['/gz', 64 * KIB],
    ['/gz48', 48 * KIB],
    ['/gzmin', MIN_BYTES_BUDGET],
  ])('a gzip-encoded upstream body (reads not sized) on %s completes, never hangs, within the budget while paused, every byte relayed', async (path, budget) => {
    const event = `data: ${'z'.repeat(992)}\n\n`;
    const plain = event.repeat(8 * 1024); // 8 MiB that gzip shrinks to a few KiB
    const gz = zlib.gzipSync(plain);
    h.up.scripts.set(path, (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      const steps: Step[] = [];
      for (let i = 0; i < gz.length; i += 512) steps.push(gz.subarray(i, i + 512));
      return steps;
    });
    const { line, gauge, body } = await pausedRun(path);
    expect(line.outcome).toBe('completed');
    expect(body.length).toBe(plain.length);
    expect(body === plain).toBe(true);
    expect(gauge).toBeLessThanOrEqual(budget);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
  });

  // Events up to the admitted size (budget − 16 KiB − 6 KiB: 8192 B here, 43008 B at 64 KiB)
  // must not end a paused stream with ERR_TIDEGATE_OVERFLOW ("exceeded by an element of 8191
  // bytes"), nor may userland hold more than the budget (16188 + 24576 B read against 30720)
  // while the logged peakBufferedBytes says less. The read after the one that carried the
  // response head is sized by readBytes() while the reader already holds the first read's
  // ~16 KiB of body: that sizing must count call.bufferedBytes() from the start.
  it.each([
    ['1000 B events', 1000],
    ['7000 B events', 7000],
    ['events of the largest size admitted (8 KiB - 1)', 8 * KIB - 1],
  ])('at the smallest byte-relay budget, %s: paused stream within the budget, exact bytes', async (_n, size) => {
    await admittedEventsPass('/min', MIN_BYTES_BUDGET, size);
  });

  // Same at 64 KiB: events h.up to 64 KiB - 16 KiB - 6 KiB = 43008 B are admitted.
  it('at a 64 KiB budget, 42000 B events (admitted): paused stream completes within the budget, exact bytes', async () => {
    await admittedEventsPass('/b64', 64 * KIB, 42_000);
  });

  async function admittedEventsPass(path: string, budget: number, size: number): Promise<void> {
    const event = `data: ${'m'.repeat(size - 8)}\n\n`;
    const count = Math.ceil((6 * 1024 * 1024) / size);
    h.up.scripts.set(path, () => {
      const steps: Step[] = [];
      for (let k = 0; k < count; k += 10) steps.push(event.repeat(Math.min(10, count - k)));
      return steps;
    });
    const { line, gauge, body } = await pausedRun(path);
    expect(line.outcome).toBe('completed');
    expect(body === event.repeat(count)).toBe(true);
    expect(gauge).toBeLessThanOrEqual(budget);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
  }

  it('CRLF and 4-byte UTF-8 split at every offset of small upstream writes arrive byte-exact at the smallest budget', async () => {
    // Events of odd lengths with CRLF line ends and 4-byte code points, written in 1021 B pieces
    // so every boundary falls inside a CRLF pair or a code point somewhere.
    const events: string[] = [];
    for (let i = 0; i < 3000; i++) events.push(`id: ${i}\r\ndata: ${'😀é'.repeat((i % 37) + 1)}x\r\n\r\n`);
    const all = Buffer.from(events.join(''));
    h.up.scripts.set('/utf', () => {
      const steps: Step[] = [];
      for (let i = 0; i < all.length; i += 1021) steps.push(all.subarray(i, i + 1021));
      return steps;
    });
    const { line, body } = await pausedRun('/utf', 400);
    expect(line.outcome).toBe('completed');
    // The byte relay normalises line ends to LF (docs/gateway.md); every other byte is kept.
    expect(Buffer.from(body).equals(Buffer.from(all.toString('utf8').replace(/\r\n/g, '\n')))).toBe(true);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(MIN_BYTES_BUDGET);
  });

  it('twelve paused streams reading in the same ticks each stay within their own budget', async () => {
    const event = `data: ${'c'.repeat(3000 - 8)}\n\n`;
    const count = 700; // 2.1 MB each
    h.up.scripts.set('/many', () => {
      const steps: Step[] = [];
      for (let k = 0; k < count; k += 20) steps.push(event.repeat(Math.min(20, count - k)));
      return steps;
    });
    const before = h.logs.streams().length;
    const many = await Promise.all(Array.from({ length: 12 }, () => RawClient.request(h.gw.port, '/many')));
    clients.push(...many);
    const gauge = await sampleBuffered(h.gw.url, 800);
    for (const c of many) c.readAll();
    for (const c of many) expect(await c.waitClosed(30_000)).toBe(true);
    await waitFor(() => h.logs.streams().length >= before + 12, 5000);
    await waitFor(() => h.logs.streams().slice(before).filter((l) => (l as Record<string, unknown>).route === '/many').length >= 12, 5000);
    const lines = (h.logs.streams().slice(before) as Array<Record<string, unknown>>).filter((l) => l.route === '/many');
    for (const l of lines) {
      expect(l.outcome).toBe('completed');
      expect(l.peakBufferedBytes as number).toBeLessThanOrEqual(40 * KIB);
    }
    for (const c of many) expect(c.body() === event.repeat(count)).toBe(true);
    expect(gauge).toBeLessThanOrEqual(12 * 40 * KIB);
  });

  it('identity body, small events then one near the event cap (64 KiB budget): a paused stream completes, never hangs, exact bytes', async () => {
    const small = `data: ${'s'.repeat(3000 - 8)}\n\n`;
    const big = `data: ${'B'.repeat(40_000 - 8)}\n\n`;
    const unit = small.repeat(5) + big; // 55 KB
    const units = 120; // 6.6 MB
    h.up.scripts.set('/mixed', () => Array.from({ length: units }, () => unit));
    const { line, gauge, body } = await pausedRun('/mixed');
    expect(line.outcome).toBe('completed');
    expect(body === unit.repeat(units)).toBe(true);
    expect(gauge).toBeLessThanOrEqual(64 * KIB);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(64 * KIB);
  });

  it('a client reading in small bursts every 5 ms (rapid pause/resume), mixed event sizes: completes, never hangs, exact bytes, within the budget', async () => {
    const unit = `data: ${'s'.repeat(2992)}\n\n`.repeat(5) + `data: ${'B'.repeat(30_000 - 8)}\n\n`; // 45 KB
    const units = 30; // 1.35 MB
    h.up.scripts.set('/jerky', () => Array.from({ length: units }, () => unit));
    const before = h.logs.streams().length;
    const client = await RawClient.request(h.gw.port, '/jerky');
    clients.push(client);
    client.readAtRate(1_500_000, 5);
    expect(await client.waitClosed(15_000)).toBe(true);
    client.stopReading();
    client.readSome();
    await waitFor(() => h.logs.streams().slice(before).some((l) => (l as Record<string, unknown>).route === '/jerky'), 5000);
    const line = (h.logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === '/jerky') as Record<string, unknown>;
    expect(line.outcome).toBe('completed');
    expect(client.body() === unit.repeat(units)).toBe(true);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(64 * KIB);
  });

  it.each([
    ['/huge', 64 * KIB, 200_000],
    ['/huge-min', MIN_BYTES_BUDGET, 12_000],
  ])('%s: an event over the admitted size is refused as it arrives (ERR_TIDEGATE_SSE_LIMIT after the whole events before it), within the budget, never hangs', async (path, budget, hugeBytes) => {
    const small = `data: ${'s'.repeat(992)}\n\n`;
    const huge = `data: ${'H'.repeat(hugeBytes - 8)}\n\n`;
    h.up.scripts.set(path, () => [small.repeat(5), huge.slice(0, 5000), 20, huge.slice(5000), small.repeat(5)]);
    const { line, body } = await pausedRun(path, 300);
    expect(line).toMatchObject({ outcome: 'upstream_error', errorCode: 'ERR_TIDEGATE_SSE_LIMIT' });
    expect(body.startsWith(small.repeat(5))).toBe(true);
    expect(body.slice(small.length * 5)).toMatch(/^event: error\n/);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
  });
});
