/**
 * The byte relay end to end with sized upstream reads from one shared buffer, the adapter's
 * per-stream parser and the bridge's batch created per tick all on the path at once.
 * Ten concurrent streams with different budgets (so different read sizes),
 * different bodies and different readers: every stream's bytes arrive exactly (sha256).
 */
import crypto from 'node:crypto';
import { RawClient, waitFor } from '../../harness/net';
import { type Step, useRelayHarness } from '../../harness/relay-harness';

const KIB = 1024;
const BUDGETS = [30 * KIB, 33 * KIB + 7, 40 * KIB, 48 * KIB, 64 * KIB, 100 * KIB, 30 * KIB, 41 * KIB + 999, 64 * KIB, 256 * KIB];
const sha = (b: Buffer): string => crypto.createHash('sha256').update(b).digest('hex');

/** Stream `i`'s upstream body: events of varied sizes (1 B .. 7 KiB of data), UTF-8, CRLF on some. */
function body(i: number, bytes = 700 * KIB): Buffer {
  const events: string[] = [];
  let n = 0;
  let k = 0;
  while (n < bytes) {
    const len = ((k * 7919 + i * 104729) % 7000) + 1;
    const eol = k % 5 === 0 ? '\r\n' : '\n';
    const e = `id: ${i}-${k}${eol}data: ${'€😀a'.repeat(Math.ceil(len / 8)).slice(0, len)}${eol}${eol}`;
    events.push(e);
    n += Buffer.byteLength(e);
    k++;
  }
  return Buffer.from(events.join(''));
}

describe('byte relay, ten concurrent streams, exact bytes', () => {
  const h = useRelayHarness((url) => {
    const routes = BUDGETS.map((b, i) => ({ path: `/r${i}`, provider: 'passthrough', url: `${url}/r${i}`, policy: { maxBufferedBytes: b, overflow: 'pause', stallTimeoutMs: 0, relay: 'bytes' } }));
    return routes;
  });
  const { clients } = h;

  it('every stream gets its own upstream bytes exactly (line ends as LF), within its budget', async () => {
    const sent = BUDGETS.map((_, i) => body(i));
    sent.forEach((all, i) => {
      const piece = [1021, 4093, 17, 65_537, 8191][i % 5] as number;
      h.up.scripts.set(`/r${i}`, () => {
        const steps: Step[] = [];
        for (let at = 0; at < all.length; at += piece) steps.push(all.subarray(at, at + piece));
        return steps;
      });
    });
    const before = h.logs.streams().length;
    const cs = await Promise.all(BUDGETS.map((_, i) => RawClient.request(h.gw.port, `/r${i}`)));
    clients.push(...cs);
    // Half read everything at once; half read slowly at first (paused streams, sized reads), then all.
    cs.forEach((c, i) => (i % 2 === 0 ? c.readAll() : c.readAtRate(400 * KIB, 20)));
    await new Promise((r) => setTimeout(r, 300));
    cs.forEach((c, i) => i % 2 === 1 && c.readAll());
    const closed = await Promise.all(cs.map((c) => c.waitClosed(20_000)));
    expect(closed.every(Boolean)).toBe(true);
    const report = cs.map((c, i) => `r${i}: ${sha(Buffer.from(c.body(), 'utf8')) === sha(Buffer.from((sent[i] as Buffer).toString('utf8').replace(/\r\n/g, '\n'))) ? 'ok' : 'CORRUPT'}`);
    expect(report).toEqual(BUDGETS.map((_, i) => `r${i}: ok`));
    await waitFor(() => h.logs.streams().length - before >= BUDGETS.length, 5000);
    const lines = h.logs.streams().slice(before) as Array<Record<string, unknown>>;
    for (let i = 0; i < BUDGETS.length; i++) {
      const line = lines.find((l) => l.route === `/r${i}`) as Record<string, unknown>;
      expect(line.outcome).toBe('completed');
      expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(BUDGETS[i] as number);
    }
  }, 40_000);

  it('streams whose clients stall keep their frames intact while fast streams reuse the buffers of released reads', async () => {
    const sent = BUDGETS.map((_, i) => body(i + 20));
    sent.forEach((all, i) => {
      h.up.scripts.set(`/r${i}`, () => {
        const steps: Step[] = [];
        for (let at = 0; at < all.length; at += 65_536) steps.push(all.subarray(at, at + 65_536));
        return steps;
      });
    });
    const cs = await Promise.all(BUDGETS.map((_, i) => RawClient.request(h.gw.port, `/r${i}`)));
    clients.push(...cs);
    // Odd streams' clients read nothing for a second: their frames wait in the socket's queue.
    cs.forEach((c, i) => i % 2 === 0 && c.readAll());
    await new Promise((r) => setTimeout(r, 1000));
    cs.forEach((c, i) => i % 2 === 1 && c.readAll());
    const closed = await Promise.all(cs.map((c) => c.waitClosed(20_000)));
    expect(closed.every(Boolean)).toBe(true);
    const report = cs.map((c, i) => `r${i}: ${sha(Buffer.from(c.body(), 'utf8')) === sha(Buffer.from((sent[i] as Buffer).toString('utf8').replace(/\r\n/g, '\n'))) ? 'ok' : 'CORRUPT'}`);
    expect(report).toEqual(BUDGETS.map((_, i) => `r${i}: ok`));
  }, 40_000);
});

/**
 * Twelve streams with the same budget (so the reads of one fit the buffers of another's):
 * stalled, slow and fast clients mixed, the buffers of released reads reused across them while
 * lagging streams' sockets hold frames; every byte checked.
 */
describe('byte relay, equal budgets, stalled, slow and fast clients mixed, exact bytes', () => {
  const STREAMS = 12;
  const h = useRelayHarness((url) =>
    Array.from({ length: STREAMS }, (_, i) => ({ path: `/m${i}`, provider: 'passthrough', url: `${url}/m${i}`, policy: { maxBufferedBytes: 64 * KIB, overflow: 'pause', stallTimeoutMs: 0, relay: 'bytes' } })),
  );
  const { clients } = h;

  it('a read never takes the buffer of frames a lagging stream still holds', async () => {
    const sent = Array.from({ length: STREAMS }, (_, i) => body(i + 60, 1024 * KIB));
    sent.forEach((all, i) => {
      const piece = [65_536, 20_000, 33_333][i % 3] as number;
      h.up.scripts.set(`/m${i}`, () => {
        const steps: Step[] = [];
        for (let at = 0; at < all.length; at += piece) steps.push(all.subarray(at, at + piece));
        return steps;
      });
    });
    const cs = await Promise.all(sent.map((_, i) => RawClient.request(h.gw.port, `/m${i}`)));
    clients.push(...cs);
    // A third stall, a third read in bursts (their sockets hold unsent bytes between reads), a
    // third read everything; after 1.5 s every client reads everything.
    cs.forEach((c, i) => (i % 3 === 1 ? c.readAtRate(1024 * KIB, 50) : i % 3 === 2 ? c.readAll() : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    cs.forEach((c, i) => i % 3 !== 2 && c.readAll());
    const closed = await Promise.all(cs.map((c) => c.waitClosed(30_000)));
    expect(closed.every(Boolean)).toBe(true);
    const report = cs.map((c, i) => `m${i}: ${sha(Buffer.from(c.body(), 'utf8')) === sha(Buffer.from((sent[i] as Buffer).toString('utf8').replace(/\r\n/g, '\n'))) ? 'ok' : 'CORRUPT'}`);
    expect(report).toEqual(sent.map((_, i) => `m${i}: ok`));
  }, 60_000);
});
