import http from 'node:http';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport } from '../helpers';

const IDLE_MS = 150;

/**
 * An upstream that, on every connection, sends one event (and `preamble`) and then goes silent
 * without a terminator; a gateway with one resumable passthrough route in front of it.
 */
async function silentUpstreamGateway(retry: Record<string, number>, preamble = ''): Promise<{
  gw: RunningGateway;
  arrivals: number[];
  logs: CaptureTransport;
  close(): Promise<void>;
}> {
  const arrivals: number[] = [];
  const upstream = await listen((_req: http.IncomingMessage, res: http.ServerResponse) => {
    arrivals.push(performance.now());
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`${preamble}id: ${arrivals.length}\ndata: tick\n\n`);
    // then nothing: no terminator, no EOF
  });
  const logs = new CaptureTransport();
  const config = parseConfig({
    port: 0,
    upstream: { url: 'http://127.0.0.1:1' },
    routes: [{ path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, resumable: true, terminator: { data: '[DONE]' }, timeouts: { idleMs: IDLE_MS }, retry }],
  });
  const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  return {
    gw,
    arrivals,
    logs,
    async close() {
      await gw.close();
      await upstream.close();
    },
  };
}

/** ms between one connection going silent (its event) and the next connection arriving, minus the idle timeout. */
function backoffGaps(arrivals: number[]): number[] {
  return arrivals.slice(1).map((t, i) => t - arrivals[i] - IDLE_MS);
}

describe('resumable route: reconnect budget', () => {
  let t: Awaited<ReturnType<typeof silentUpstreamGateway>> | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('reconnects a silent upstream at most maxReconnects times with growing delays, then ends with a typed error event', async () => {
    t = await silentUpstreamGateway({ maxReconnects: 4, baseDelayMs: 100, maxDelayMs: 5000 });
    const started = performance.now();
    const res = await fetch(`${t.gw.url}/events`, { signal: AbortSignal.timeout(15_000) });
    expect(res.status).toBe(200);
    const text = await res.text();
    // The first connection and 4 reconnects, each relayed one event; nothing after the budget.
    expect(t.arrivals).toHaveLength(5);
    expect(text.match(/data: tick/g)).toHaveLength(5);
    expect(text).toMatch(/event: error\ndata: .*"code":"ERR_TIDEGATE_UPSTREAM_RESET".*reconnect budget of 4 spent/);
    // Windows 100·2^(n-1) ms, delay in the upper half of each: [50,100], [100,200], [200,400], [400,800].
    const gaps = backoffGaps(t.arrivals);
    const floors = [50, 100, 200, 400];
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(floors[i] - 5));
    // Growing: two steps on, the delay is at least twice the window of the earlier one.
    for (let i = 2; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThan(gaps[i - 2] + floors[i - 2]);
    expect(gaps[3]).toBeGreaterThan(gaps[0] + 250);
    // The stream lasted about 5 idle timeouts and the delays, not until totalMs.
    expect(performance.now() - started).toBeLessThan(5 * IDLE_MS + 1500 + 2000);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_reset', errorCode: 'ERR_TIDEGATE_UPSTREAM_RESET' });
  });

  it("never reconnects sooner than the upstream's retry: field", async () => {
    t = await silentUpstreamGateway({ maxReconnects: 2, baseDelayMs: 1, maxDelayMs: 1000 }, 'retry: 300\n');
    const res = await fetch(`${t.gw.url}/events`, { signal: AbortSignal.timeout(15_000) });
    expect(await res.text()).toContain('reconnect budget of 2 spent');
    expect(t.arrivals).toHaveLength(3);
    for (const gap of backoffGaps(t.arrivals)) expect(gap).toBeGreaterThanOrEqual(295);
  });

  it("grows the delays from baseDelayMs when the upstream's retry: is 0", async () => {
    t = await silentUpstreamGateway({ maxReconnects: 3, baseDelayMs: 100, maxDelayMs: 5000 }, 'retry: 0\n');
    const res = await fetch(`${t.gw.url}/events`, { signal: AbortSignal.timeout(15_000) });
    expect(await res.text()).toContain('reconnect budget of 3 spent');
    expect(t.arrivals).toHaveLength(4);
    // The upper halves of 100·2^(n-1) ms: at least 50, 100, 200; a retry: 0 is a floor of 0, not the base.
    const floors = [50, 100, 200];
    backoffGaps(t.arrivals).forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(floors[i] - 5));
  });

  it("caps the upstream's retry: at retry.maxDelayMs", async () => {
    t = await silentUpstreamGateway({ maxReconnects: 2, baseDelayMs: 1, maxDelayMs: 100 }, 'retry: 3600000\n');
    const started = performance.now();
    const res = await fetch(`${t.gw.url}/events`, { signal: AbortSignal.timeout(15_000) });
    expect(await res.text()).toContain('reconnect budget of 2 spent');
    expect(t.arrivals).toHaveLength(3);
    for (const gap of backoffGaps(t.arrivals)) expect(gap).toBeLessThan(100 + 200);
    expect(performance.now() - started).toBeLessThan(3 * IDLE_MS + 2 * 100 + 2000);
  });

  it('does not reconnect at all with maxReconnects 0', async () => {
    t = await silentUpstreamGateway({ maxReconnects: 0 });
    const res = await fetch(`${t.gw.url}/events`, { signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    expect(t.arrivals).toHaveLength(1);
    expect(text).toContain('reconnect budget of 0 spent');
  });
});
