/**
 * The upstream socket's receive buffer (`setUpstreamReceiveBytes`, SO_RCVBUF) over real sockets on
 * 127.0.0.1: a paused upstream leaves a bounded receive queue in the gateway's kernel (read from
 * /proc/net/tcp), and a fast upstream is not slowed.
 */
import { existsSync, readFileSync } from 'node:fs';
import type http from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import { DEFAULT_UPSTREAM_RECEIVE_BYTES, setUpstreamReceiveBytes } from '../../src/http/node-hooks';
import { openUpstreamStream } from '../../src/http/request';
import { getSocketOption, socketOptionsUnavailable } from '../../src/http/socket-options';
import { listen, waitFor } from '../harness/net';

const BUILT = existsSync(path.join(__dirname, '..', '..', 'native', 'socket-options', 'build', 'Release', 'socket_options.node'));
const required = process.platform === 'linux' && (BUILT || process.env.CI === 'true');
if (!required) process.stderr.write(`upstream receive queue specs skipped: socket options addon not built (${socketOptionsUnavailable() ?? 'not Linux'})\n`);

const MIB = 1024 * 1024;
const CHUNK = Buffer.from(`data: ${'x'.repeat(16 * 1024 - 8)}\n\n`);

/** rx_queue of the row with these ports, parsed independently (whitespace split); TIME_WAIT rows skipped. */
function rxQueue(localPort: number, remotePort: number): number | undefined {
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5 || parseInt(f[3], 16) === 6) continue;
      if (parseInt(f[1].split(':')[1], 16) === localPort && parseInt(f[2].split(':')[1], 16) === remotePort) return parseInt(f[4].split(':')[1], 16);
    }
  }
  return undefined;
}

/** An upstream that writes `totalBytes` of SSE as fast as its socket takes them. A fresh server per call: its keep-alive pool is its own. */
async function fastUpstream(totalBytes: number): Promise<Awaited<ReturnType<typeof listen>>> {
  return listen((_req, res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const pump = (): void => {
      while (sent < totalBytes && !res.destroyed) {
        sent += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  });
}

/**
 * Reads `readBytes` of the body as fast as it comes (the kernel autotunes an unbounded buffer
 * upwards), then asks for nothing more; resolves with the gateway side's receive queue once it
 * stopped moving.
 */
async function pausedReceiveQueue(receiveBytes: number, readBytes: number): Promise<{ rx: number; rcvbuf: number | undefined }> {
  setUpstreamReceiveBytes(receiveBytes);
  const upstream = await fastUpstream(1024 * MIB);
  try {
    const call = await openUpstreamStream({ url: upstream.url, method: 'GET' });
    let got = 0;
    const sub = call.body.subscribeWithDemand({ next: (b) => (got += b.length) });
    while (got < readBytes) {
      sub.request(1);
      await new Promise((r) => setImmediate(r));
    }
    const socket = (call.response.body as unknown as { socket: Socket }).socket;
    let last = -1;
    let rx = -1;
    await waitFor(() => {
      rx = rxQueue(socket.localPort as number, socket.remotePort as number) ?? -1;
      const settled = rx > 0 && rx === last;
      last = rx;
      return settled;
    }, 10_000, 100);
    const rcvbuf = getSocketOption(socket, 'receiveBuffer');
    sub.cancel();
    return { rx, rcvbuf };
  } finally {
    await upstream.close();
  }
}

/** Bytes/s of a body read as fast as it comes. */
async function readRate(receiveBytes: number, totalBytes: number): Promise<number> {
  setUpstreamReceiveBytes(receiveBytes);
  const upstream = await fastUpstream(totalBytes);
  try {
    const started = process.hrtime.bigint();
    const call = await openUpstreamStream({ url: upstream.url, method: 'GET' });
    let got = 0;
    await new Promise<void>((resolve, reject) => call.body.subscribe({ next: (b) => (got += b.length), complete: resolve, error: reject }));
    expect(got).toBe(Math.ceil(totalBytes / CHUNK.length) * CHUNK.length);
    return got / (Number(process.hrtime.bigint() - started) / 1e9);
  } finally {
    await upstream.close();
  }
}

(required ? describe : describe.skip)('upstream receive buffer (SO_RCVBUF on the agents sockets)', () => {
  afterAll(() => setUpstreamReceiveBytes(DEFAULT_UPSTREAM_RECEIVE_BYTES));

  // The smallest bound, below the kernel's initial buffer (tcp_rmem's default, 128 KiB here).
  const BOUND = 32 * 1024;

  it("keeps a paused upstream's receive queue in the gateway's kernel under twice the bound (/proc/net/tcp)", async () => {
    for (const bound of [BOUND, DEFAULT_UPSTREAM_RECEIVE_BYTES]) {
      const { rx, rcvbuf } = await pausedReceiveQueue(bound, 4 * MIB);
      // Linux doubles SO_RCVBUF for its bookkeeping; the payload it holds stays under that.
      expect(rcvbuf).toBe(2 * bound);
      expect(rx).toBeLessThanOrEqual(2 * bound);
    }
  });

  it("0 leaves the kernel's own buffer: at least tcp_rmem's default, autotuned upwards as the stream reads", async () => {
    const { rcvbuf } = await pausedReceiveQueue(0, 4 * MIB);
    const rmemDefault = Number(readFileSync('/proc/sys/net/ipv4/tcp_rmem', 'utf8').trim().split(/\s+/)[1]);
    expect(rcvbuf).toBeGreaterThanOrEqual(rmemDefault);
    expect(rcvbuf).toBeGreaterThan(2 * BOUND);
  });

  it('does not slow a fast upstream: bytes/s with the default bound vs 0, same run', async () => {
    const rates = { bounded: 0, unbounded: 0 };
    // Interleaved, so a busy moment of the machine hits both alike.
    for (let i = 0; i < 2; i++) {
      rates.unbounded += await readRate(0, 64 * MIB);
      rates.bounded += await readRate(DEFAULT_UPSTREAM_RECEIVE_BYTES, 64 * MIB);
    }
    expect(rates.bounded / rates.unbounded).toBeGreaterThan(0.5);
  }, 120_000);
});
