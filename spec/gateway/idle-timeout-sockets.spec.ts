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
    const at = (path: string, relay: string, upstreamPath: string): Record<string, unknown> => ({ ...route(path, relay), url: `${up.url}${upstreamPath}` });
    ({ gw, logs } = await testGateway(
      up.url,
      [
        route('/bytes', 'bytes'),
        route('/events', 'events'),
        at('/big-bytes', 'bytes', '/big'),
        at('/big-events', 'events', '/big'),
        ...['bytes', 'events'].flatMap((relay) => [
          at(`/chatter-${relay}`, relay, '/chatter'),
          at(`/only-chatter-${relay}`, relay, '/only-chatter'),
          at(`/flood-chatter-${relay}`, relay, '/flood-chatter'),
          at(`/slow-${relay}`, relay, '/slow'),
          at(`/late-${relay}`, relay, '/late'),
        ]),
      ],
      { heartbeatMs: 0 },
    ));
    // 16 MB at once (more than the loopback socket buffers hold), a 100 ms pause, the end.
    up.scripts.set('/big', () => [...Array.from({ length: 64 }, () => BIG_CHUNK), 100]);
    // Comments, blank lines and unknown fields whose names start with `data` every 50 ms, until
    // the gateway (or the test) closes it: bytes, never an event.
    const chatter = (res: http.ServerResponse, first: string, everyMs = 50): void => {
      res.writeHead(200, SSE_HEAD);
      res.write(first);
      const t = setInterval(() => res.write(': keep-alive\n\n\n\ndataless: tick\n\nid: 7\ndatabase\n\n'), everyMs);
      open.add(res);
      res.on('close', () => {
        clearInterval(t);
        open.delete(res);
      });
    };
    up.scripts.set('/chatter', (_req, res) => chatter(res, 'data: 1\n\ndata: 2\n\ndata: 3\n\n'));
    up.scripts.set('/only-chatter', (_req, res) => chatter(res, ': hello\n\n'));
    // An event, then comments every millisecond: on almost every turn of the gateway's loop.
    up.scripts.set('/flood-chatter', (_req, res) => chatter(res, 'data: 1\n\n', 1));
    // An event every IDLE_MS / 2 with comments between them, 8 events in all: slow, but never idle.
    up.scripts.set('/slow', () => Array.from({ length: 8 }, (_, i) => [': thinking\n\n', IDLE_MS / 4, `data: ${i}\n\n`, IDLE_MS / 4]).flat());
    // Two events IDLE_MS / 4 apart, then the end.
    up.scripts.set('/late', () => ['data: 1\n\n', IDLE_MS / 4, 'data: 2\n\n']);
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

  it.each(['bytes', 'events'])('%s relay: an upstream sending only comments and blank lines past idleMs ends with TimeoutError(idle)', async (relay) => {
    for (const [path, events] of [[`/chatter-${relay}`, 'data: 3\n\n'], [`/only-chatter-${relay}`, undefined], [`/flood-chatter-${relay}`, 'data: 1\n\n']] as const) {
      const before = logs.streams().length;
      operatorTimers.clear();
      const started = Date.now();
      const client = await RawClient.request(gw.port, path);
      clients.push(client);
      client.readAll();
      expect(await client.waitClosed(5000)).toBe(true);
      const took = Date.now() - started;
      await waitFor(() => logs.streams().length > before, 2000);
      expect(logs.streams()[before]).toMatchObject({ outcome: 'timeout', timeoutKind: 'idle' });
      expect(took).toBeGreaterThanOrEqual(IDLE_MS);
      expect(took).toBeLessThan(IDLE_MS + 2000);
      if (events !== undefined) expect(client.body()).toContain(events);
      expect(client.body()).toContain('idle timeout after 400 ms');
      expect(operatorTimers.size).toBe(0);
    }
  });

  it.each(['bytes', 'events'])('%s relay: events closer than idleMs keep a stream longer than idleMs alive, comments between them or not', async (relay) => {
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/slow-${relay}`);
    clients.push(client);
    client.readAll();
    expect(await client.waitClosed(10_000)).toBe(true);
    await waitFor(() => logs.streams().length > before, 2000);
    expect((logs.streams()[before] as Record<string, unknown>).outcome).toBe('completed');
    expect(client.body()).toContain('data: 7\n\n');
  });

  it.each(['bytes', 'events'])('%s relay: an event that reached the socket while the event loop was blocked past idleMs is read before the deadline is judged', async (relay) => {
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, `/late-${relay}`);
    clients.push(client);
    let blockedMs = 0;
    client.readAll((chunk) => {
      if (blockedMs > 0 || !chunk.includes('data: 1')) return;
      // The deadline armed after event 1 passes while the loop is blocked; the upstream's timer
      // for event 2 falls due meanwhile and runs first, so event 2 is in the socket when the
      // gateway's timer fires.
      const from = Date.now();
      while (Date.now() - from < IDLE_MS + IDLE_MS / 2); // bounded by the clock
      blockedMs = Date.now() - from;
    });
    expect(await client.waitClosed(5000)).toBe(true);
    await waitFor(() => logs.streams().length > before, 2000);
    expect(blockedMs).toBeGreaterThan(IDLE_MS);
    expect((logs.streams()[before] as Record<string, unknown>).outcome).toBe('completed');
    expect(client.body()).toContain('data: 2\n\n');
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
