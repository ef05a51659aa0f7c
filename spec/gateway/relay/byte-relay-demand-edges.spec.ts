/**
 * Demand in bytes at the edges of the byte relay: budgets around the threshold where it
 * turns off (16 KiB socket + 36 KiB upstream side + 1 KiB framing slack + 1 KiB frame = 55296 B), events exactly at and
 * above the frame size with overflow: pause, the logged peak against the live gauge.
 */
import type http from 'node:http';

import { RawClient, waitFor } from '../../harness/net';
import { sampleBuffered, type Step, useRelayHarness } from '../../harness/relay-harness';

// socket highWaterMark + upstream side (4 KiB mark + two 16 KiB reads) + 1 KiB framing slack + a 1 KiB frame
const THRESHOLD = 16 * 1024 + 4 * 1024 + 2 * 16 * 1024 + 1024 + 1024; // 55296

const CASES: Array<[string, number, number]> = [
  ['threshold (1 KiB frames), 1000 B events', THRESHOLD, 1000],
  ['threshold, events one byte over the frame (1025 B)', THRESHOLD, 1025],
  ['threshold, 20000 B events (far over the frame)', THRESHOLD, 20_000],
  ['threshold + 1 (1025 B frames), 1025 B events', THRESHOLD + 1, 1025],
  ['64 KiB, events exactly one frame (11264 B)', 64 * 1024, 11_264],
  ['64 KiB, 11265 B events (over the frame, still fit)', 64 * 1024, 11_265],
  ['64 KiB, 40000 B events (cannot fit beside the reserve)', 64 * 1024, 40_000],
];

describe('byte relay demand at the edges', () => {
  const h = useRelayHarness((url) => {
    const routes = CASES.map(([, budget], i) => ({ path: `/b${i}`, provider: 'passthrough', url: `${url}/pt`, policy: { maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 } }));
    routes.push({ path: '/exact', provider: 'passthrough', url: `${url}/pt`, policy: { maxBufferedBytes: THRESHOLD, overflow: 'pause', stallTimeoutMs: 0 } });
    routes.push({ path: '/below', provider: 'passthrough', url: `${url}/pt`, policy: { maxBufferedBytes: THRESHOLD - 1, overflow: 'pause', stallTimeoutMs: 0 } });
    routes.push({ path: '/events64', provider: 'passthrough', url: `${url}/pt`, policy: { maxBufferedBytes: 64 * 1024, overflow: 'pause', stallTimeoutMs: 0, relay: 'events' } as never });
    return routes;
  });
  const { clients } = h;

  /** Streams ~24 MB of `eventBytes` events to a client that stops for 800 ms, then reads all. */
  async function run(route: string, eventBytes: number): Promise<{ line: Record<string, unknown>; gauge: number; body: string; event: string; count: number }> {
    const event = `data: ${'e'.repeat(eventBytes - 8)}\n\n`;
    expect(Buffer.byteLength(event)).toBe(eventBytes);
    const count = Math.ceil((24 * 1024 * 1024) / eventBytes);
    h.up.scripts.set('/pt', (_req: http.IncomingMessage) => {
      const steps: Step[] = [];
      const ten = event.repeat(10);
      for (let k = 0; k < count; k += 10) steps.push(k + 10 <= count ? ten : event.repeat(count - k));
      return steps;
    });
    const before = h.logs.streams().length;
    const client = await RawClient.request(h.gw.port, route);
    clients.push(client);
    client.readSome(1000);
    const gauge = await sampleBuffered(h.gw.url, 800);
    client.readAll();
    expect(await client.waitClosed(30_000)).toBe(true);
    await waitFor(() => h.logs.streams().length > before, 5000);
    const line = h.logs.streams()[before] as Record<string, unknown>;
    return { line, gauge, body: client.body(), event, count };
  }

  it.each(CASES.map((c, i) => [...c, i] as const))('%s: completes or overflows with an error event, never hangs, peak and gauge within the budget', async (_name, budget, eventBytes, i) => {
    const { line, gauge, body, event, count } = await run(`/b${i}`, eventBytes);
    expect(['completed', 'overflow']).toContain(line.outcome);
    if (line.outcome === 'completed') expect(body).toBe(event.repeat(count));
    else {
      expect(body).toContain('ERR_TIDEGATE_OVERFLOW');
      // Whole events before the error, never a cut one.
      expect(body.slice(0, body.indexOf('event: error')).length % eventBytes).toBe(0);
    }
    expect(gauge).toBeLessThanOrEqual(budget);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
    expect(line.peakBufferedBytes as number).toBeGreaterThanOrEqual(gauge);
  });

  // At the smallest budget that turns the byte relay on, events of exactly one frame (1024 B)
  // must not end a paused stream with ERR_TIDEGATE_OVERFLOW ("exceeded by an element of 1024
  // bytes"): SendFlowOptions.maxElementBytes promises no pause overflow for elements of at most
  // that size when budget ≥ reserve + writableHighWaterMark + maxElementBytes. The bridge forces a
  // one-element request when nothing is in flight; the 1 KiB of framing slack in
  // byteRelayFrameBytes (relay.ts) covers the HTTP chunk framing res.writableLength counts (hex
  // size + 2 CRLF per write), so that forced request never lands a few bytes short of a frame.
  it('events exactly one frame long never overflow a paused stream at the threshold budget', async () => {
    const { line, body, event, count } = await run('/exact', 1024);
    expect(line.outcome).toBe('completed');
    expect(body).toBe(event.repeat(count));
  });

  // Below the threshold the gateway falls back to the event relay, whose budget covers the chain
  // and the bridge only (docs/gateway.md, "Sizing memory"), not the upstream reader, whose growth
  // count-based demand cannot keep room for. A paused stream's held bytes (peakBufferedBytes and
  // tidegate_buffered_bytes) stay within maxBufferedBytes; the same holds for `relay: events` at
  // 64 KiB (next spec).
  it('a paused event-relay stream (budget just below the byte-relay threshold) stays within its budget', async () => {
    const { line, gauge } = await run('/below', 1000);
    expect(gauge).toBeLessThanOrEqual(THRESHOLD - 1);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(THRESHOLD - 1);
  });

  it('relay: events at 64 KiB (paused, 1000 B events): the logged peak is at least the live gauge', async () => {
    const { line, gauge } = await run('/events64', 1000);
    expect(line.peakBufferedBytes as number).toBeGreaterThanOrEqual(gauge);
  });
});
