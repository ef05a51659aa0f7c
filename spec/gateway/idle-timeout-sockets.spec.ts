/**
 * The lazy idle deadline on real sockets: it fires after the upstream's
 * silence while demand is outstanding, never while a paused client leaves no demand, and no
 * timer outlives the stream.
 */
import type http from 'node:http';
import type { RunningGateway } from '../../src/gateway/server';
import type { CaptureTransport } from './helpers';
import { RawClient, sleep, waitFor } from '../harness/net';
import { scriptedUpstream, SSE_HEAD, testGateway, type ScriptedUpstream } from '../harness/relay-harness';

const IDLE_MS = 400;

/** Timers the timeout operators scheduled (the upstream call's timerScheduler) that are still live. */
const operatorTimers = new Set<unknown>();
const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
beforeAll(() => {
  globalThis.setTimeout = ((callback: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (!(new Error().stack ?? '').includes('timeout-subscriber')) return real.setTimeout(callback, ms, ...args);
    const t = real.setTimeout((...a: unknown[]) => {
      operatorTimers.delete(t); // fired: no longer live
      callback(...a);
    }, ms, ...args);
    operatorTimers.add(t);
    return t;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((t: Parameters<typeof clearTimeout>[0]) => {
    operatorTimers.delete(t);
    real.clearTimeout(t);
  }) as typeof clearTimeout;
});
afterAll(() => {
  globalThis.setTimeout = real.setTimeout;
  globalThis.clearTimeout = real.clearTimeout;
});

const EVENT = `data: ${'i'.repeat(1000 - 8)}\n\n`;
const BIG_CHUNK = EVENT.repeat(256); // 256 KB

describe('lazy idle timeout on real sockets', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  const clients: RawClient[] = [];
  const open = new Set<http.ServerResponse>();

  beforeAll(async () => {
    up = await scriptedUpstream();
    const route = (path: string, relay: string): Record<string, unknown> => ({
      path,
      provider: 'passthrough',
      url: `${up.url}/silent`,
      timeouts: { idleMs: IDLE_MS, totalMs: 0 },
      policy: { maxBufferedBytes: 64 * 1024, overflow: 'pause', stallTimeoutMs: 0, relay },
    });
    ({ gw, logs } = await testGateway(up.url, [route('/bytes', 'bytes'), route('/events', 'events'), { ...route('/big-bytes', 'bytes'), url: `${up.url}/big` }, { ...route('/big-events', 'events'), url: `${up.url}/big` }], { heartbeatMs: 0 }));
    // 16 MB at once (more than the loopback socket buffers hold), a 100 ms pause, the end.
    up.scripts.set('/big', () => [...Array.from({ length: 64 }, () => BIG_CHUNK), 100]);
    // Three events, then silence until the test ends it (no timer on the upstream's side).
    up.scripts.set('/silent', (_req, res) => {
      res.writeHead(200, SSE_HEAD);
      res.write('data: 1\n\ndata: 2\n\ndata: 3\n\n');
      open.add(res);
      res.on('close', () => open.delete(res));
    });
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
    for (const r of open) r.destroy();
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  it.each(['bytes', 'events'])('%s relay: an upstream silent past idleMs with a reading client ends with TimeoutError(idle), and leaves no timer behind', async (relay) => {
    const before = logs.streams().length;
    operatorTimers.clear();
    const started = Date.now();
    const client = await RawClient.request(gw.port, `/${relay}`);
    clients.push(client);
    client.readAll();
    expect(await client.waitClosed(5000)).toBe(true);
    const took = Date.now() - started;
    await waitFor(() => logs.streams().length > before, 2000);
    const line = logs.streams()[before] as Record<string, unknown>;
    expect(line).toMatchObject({ outcome: 'timeout', timeoutKind: 'idle' });
    expect(took).toBeGreaterThanOrEqual(IDLE_MS);
    expect(client.body()).toContain('data: 3\n\n');
    expect(operatorTimers.size).toBe(0);
  });

  it('a client cancelling while the idle deadline is armed leaves no timer behind', async () => {
    const before = logs.streams().length;
    operatorTimers.clear();
    const client = await RawClient.request(gw.port, '/bytes');
    clients.push(client);
    client.readAll();
    await waitFor(() => client.body().includes('data: 3\n\n'), 2000);
    await waitFor(() => operatorTimers.size > 0, 1000); // the idle deadline is armed
    client.destroy();
    await waitFor(() => logs.streams().length > before, 2000);
    expect((logs.streams()[before] as Record<string, unknown>).outcome).toBe('client_closed');
    expect(operatorTimers.size).toBe(0);
  });

  it.each(['bytes', 'events'])('%s relay: a client paused longer than idleMs (no demand) does not time the upstream out', async (relay) => {
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/big-${relay}`);
    clients.push(client);
    await sleep(3 * IDLE_MS);
    client.readAll();
    expect(await client.waitClosed(20_000)).toBe(true);
    await waitFor(() => logs.streams().length > before, 2000);
    expect((logs.streams()[before] as Record<string, unknown>).outcome).toBe('completed');
    expect(client.body().length).toBe(64 * BIG_CHUNK.length);
    expect(operatorTimers.size).toBe(0);
  });
});
