/**
 * The stall cut's grace (error event + FIN, reset after another stallTimeoutMs) and the
 * /proc/net/tcp send-queue reader, over real sockets on 127.0.0.1 / ::1.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { sendFlow, type StreamResult } from '../../src/express/send-flow';
import { kernelSendQueueBytes } from '../../src/express/bridge/tcp-send-queue';
import { fromIterable } from '../../src/flow/sources/iterable';
import { sleep, waitFor } from '../harness/net';

const STALL_MS = 800;
const EVENT = { data: 'x'.repeat(16 * 1024) };

/** An independent /proc/net/tcp{,6} parse: split on whitespace, every row with its addresses. */
interface Row { local: string; localPort: number; remote: string; remotePort: number; state: number; tx: number }
function procRows(): Row[] {
  const rows: Row[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = readFileSync(file, 'utf8').split('\n').slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      const [la, lp] = f[1].split(':');
      const [ra, rp] = f[2].split(':');
      rows.push({ local: la, localPort: parseInt(lp, 16), remote: ra, remotePort: parseInt(rp, 16), state: parseInt(f[3], 16), tx: parseInt(f[4].split(':')[0], 16) });
    }
  }
  return rows;
}

interface Harness {
  server: http.Server;
  port: number;
  results: StreamResult[];
  close(): Promise<void>;
}

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c();
});

/** /stream: an endless-enough flow of 16 KiB events; /slow: a 3×STALL_MS response in chunks; /ok: "ok". */
async function harness(host = '127.0.0.1'): Promise<Harness> {
  const results: StreamResult[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    if (req.url === '/stream') {
      const events = (function* () {
        for (let i = 0; i < 4000; i++) yield EVENT;
      })();
      sendFlow(res, fromIterable(events), { prefetch: 4, stallTimeoutMs: STALL_MS, heartbeatMs: 0, onFinish: (r) => results.push(r) });
      return;
    }
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const tick = (): void => {
        if (res.destroyed) return;
        if (++n > 30) return void res.end('end\n');
        res.write(`chunk ${n}\n`);
        const t = setTimeout(tick, (3 * STALL_MS) / 30);
        timers.add(t);
      };
      tick();
      return;
    }
    res.end('ok');
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    results,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A keep-alive (no `Connection: close`) client that reads nothing until told. */
async function pausedClient(port: number, host = '127.0.0.1', localAddress?: string, localPort?: number): Promise<{ socket: net.Socket; data: Buffer[]; closed: () => boolean; error: () => Error | undefined }> {
  const socket = net.connect({ port, host, localAddress, localPort });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.pause();
  const data: Buffer[] = [];
  let closed = false;
  let error: Error | undefined;
  socket.on('close', () => (closed = true));
  socket.on('error', (e) => (error = e));
  open.push(() => void socket.destroy());
  return { socket, data, closed: () => closed, error: () => error };
}

describe('stall cut grace', () => {
  // The grace timer must not reset a keep-alive connection that the client has already drained
  // and reused: a keep-alive socket (HTTP/1.1 without `Connection: close`, as every SDK agent
  // sends) stays open after res.end(), so a reset armed for stallTimeoutMs would fire into
  // whatever request the client sent next on it. A cut stream's connection is not reusable.
  it('a drained keep-alive connection is not reset under its next request', async () => {
    const h = await harness();
    open.push(() => h.close());
    const c = await pausedClient(h.port);
    c.socket.write(`GET /stream HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor(() => h.results.length === 1, 20_000);
    expect(h.results[0].outcome).toBe('stalled');
    // The client comes back at once and reads the whole first response.
    c.socket.on('data', (b: Buffer) => c.data.push(b));
    c.socket.resume();
    await waitFor(() => Buffer.concat(c.data).includes('0\r\n\r\n'), 10_000);
    expect(Buffer.concat(c.data).toString('latin1')).toContain('ERR_TIDEGATE_STALLED');
    // Next request on the same connection (as a keep-alive agent does): 3×STALL_MS long.
    const mark = Buffer.concat(c.data).length;
    c.socket.write(`GET /slow HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor(() => c.closed() || Buffer.concat(c.data).subarray(mark).includes('end\n'), 10_000);
    expect(c.error()).toBeUndefined();
    expect(Buffer.concat(c.data).subarray(mark).toString('latin1')).toContain('end\n');
  });

  // A reader that comes back during the grace, takes part of the backlog (1 MiB) and stalls again
  // is still reset: for a `Connection: close` request Node closes the fd as soon as its own buffer
  // is handed to the kernel, not when the peer has read it, which would leave an orphaned
  // FIN-WAIT-1 socket holding the kernel send queue (2.7 MB 4 s later), the very thing the reset
  // exists to free.
  it('a reader that takes part of the backlog then stalls again is still reset (no orphan holding the send queue)', async () => {
    const h = await harness();
    open.push(() => h.close());
    const c = await pausedClient(h.port);
    c.socket.write(`GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    await waitFor(() => h.results.length === 1, 20_000);
    expect(h.results[0].outcome).toBe('stalled');
    const clientPort = c.socket.localPort as number;
    // Take 1 MiB (enough for Node to hand its own buffer to the kernel), then stall again.
    let taken = 0;
    const deadline = Date.now() + 5000;
    while (taken < 1024 * 1024 && Date.now() < deadline) {
      const chunk: Buffer | null = c.socket.read();
      if (chunk === null) {
        c.socket.read(0);
        await sleep(5);
        continue;
      }
      taken += chunk.length;
    }
    await sleep(4 * STALL_MS);
    const serverSide = procRows().find((r) => r.localPort === h.port && r.remotePort === clientPort);
    // Reset (gone) or drained: never an orphan still holding the queue.
    expect(serverSide === undefined ? 0 : serverSide.tx).toBe(0);
  });

  it('a reader that never comes back is reset after the grace (no socket left)', async () => {
    const h = await harness();
    open.push(() => h.close());
    const c = await pausedClient(h.port);
    c.socket.write(`GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    await waitFor(() => h.results.length === 1, 20_000);
    expect(h.results[0].outcome).toBe('stalled');
    const clientPort = c.socket.localPort as number;
    await sleep(3 * STALL_MS);
    const serverSide = procRows().find((r) => r.localPort === h.port && r.remotePort === clientPort);
    expect(serverSide).toBeUndefined();
  });

  it('server.close() during many graces completes once the grace resets run (no leaked socket)', async () => {
    const h = await harness();
    const clients = await Promise.all(Array.from({ length: 12 }, () => pausedClient(h.port)));
    for (const c of clients) c.socket.write(`GET /stream HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor(() => h.results.length === 12, 25_000);
    expect(h.results.every((r) => r.outcome === 'stalled')).toBe(true);
    const closed = new Promise<void>((r) => h.server.close(() => r()));
    h.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise<string>((r) => (timer = setTimeout(() => r('open'), 6 * STALL_MS)))]);
    clearTimeout(timer);
    // Without closeAllConnections the server still closes: every stalled socket is reset by its grace.
    expect(outcome).toBe('closed');
    // The resets reached the clients (a paused socket notices only when it reads).
    for (const c of clients) c.socket.resume();
    await waitFor(() => clients.every((c) => c.closed()), 5000);
  });
});

describe('kernelSendQueueBytes over real sockets', () => {
  async function stalledPair(host: string, localAddress?: string, localPort?: number): Promise<{ server: net.Socket; client: net.Socket; close(): void }> {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, host, r));
    const accepted = new Promise<net.Socket>((r) => srv.once('connection', r));
    const client = net.connect({ port: (srv.address() as AddressInfo).port, host, localAddress, localPort });
    client.on('error', () => undefined);
    client.pause();
    const server = await accepted;
    server.on('error', () => undefined);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 400 && server.write(chunk); i++);
    const close = (): void => {
      client.destroy();
      server.destroy();
      srv.close();
    };
    open.push(close);
    return { server, client, close };
  }

  it.each([
    ['IPv4', '127.0.0.1'],
    ['IPv6', '::1'],
  ])('matches an independent parse of tx_queue on %s', async (_name, host) => {
    const { server } = await stalledPair(host);
    await sleep(100);
    const rows = procRows();
    const want = rows.find((r) => r.localPort === server.localPort && r.remotePort === server.remotePort && r.state !== 6);
    expect(want).toBeDefined();
    expect(want?.tx).toBeGreaterThan(0);
    // maxAgeMs 0: a fresh table read, between two independent ones. A loaded machine may still be
    // moving the queue (libuv refilling it): compared once the queue held still around our read.
    const row = (): Row | undefined => procRows().find((r) => r.localPort === server.localPort && r.remotePort === server.remotePort && r.state !== 6);
    let before = want?.tx;
    let got: number | undefined;
    let after: number | undefined;
    for (let i = 0; i < 50; i++) {
      await sleep(20);
      got = kernelSendQueueBytes(server, 0);
      after = row()?.tx;
      if (before === after) break;
      before = after;
    }
    expect(after).toBe(before);
    expect(got).toBe(after);
  });

  // The table is keyed by addresses as well as ports. Two clients with the same source port from
  // different addresses (two load balancers, NAT, 127.0.0.1 vs 127.0.0.2) would otherwise share
  // the key "serverPort:clientPort" and one socket would read the other's queue: a stalled stream
  // looks alive (never cut) when the other socket's queue moves, or a live slow reader looks
  // stalled. The address fields are hex at fixed offsets: 8 hex digits, little-endian per 32-bit
  // word, for v4; 32 for v6 incl. ::ffff:a.b.c.d mapped.
  it('two connections with the same ports from different client addresses get their own queues', async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '0.0.0.0', r));
    const port = (srv.address() as AddressInfo).port;
    const accepted: net.Socket[] = [];
    srv.on('connection', (s) => {
      s.on('error', () => undefined);
      accepted.push(s);
    });
    const a = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
    await new Promise<void>((r) => a.once('connect', r));
    const clientPort = a.localPort as number;
    const b = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2', localPort: clientPort });
    await new Promise<void>((r) => b.once('connect', r));
    for (const s of [a, b]) {
      s.on('error', () => undefined);
      s.pause();
    }
    open.push(() => {
      a.destroy();
      b.destroy();
      for (const s of accepted) s.destroy();
      srv.close();
    });
    await waitFor(() => accepted.length === 2, 2000);
    // One server socket holds a stalled backlog, the other nothing.
    const stalled = accepted.find((s) => s.remoteAddress === '127.0.0.2') as net.Socket;
    const idle = accepted.find((s) => s.remoteAddress === '127.0.0.1') as net.Socket;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 400 && stalled.write(chunk); i++);
    await sleep(100);
    const rows = procRows().filter((r) => r.localPort === port && r.remotePort === clientPort);
    expect(rows).toHaveLength(2);
    expect(kernelSendQueueBytes(idle, 0)).toBe(0);
    expect(kernelSendQueueBytes(stalled, 0)).toBeGreaterThan(0);
  });
});
