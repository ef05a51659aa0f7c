/**
 * The client socket's unsent queue (`kernelUnsentBytes`, TCP_NOTSENT_LOWAT) over real sockets on
 * 127.0.0.1: a stalled reader leaves a bounded kernel send queue (read from /proc/net/tcp), and a
 * fast reader is not slowed.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { sendFlow, type StreamHandle } from '../../../src/express/send-flow';
import { DEFAULT_KERNEL_UNSENT_BYTES } from '../../../src/express/bridge/kernel-unsent';
import { fromIterable } from '../../../src/flow/sources/iterable';
import { socketOptionsUnavailable } from '../../../src/http/socket-options';
import { waitFor } from '../../harness/net';

const BUILT = existsSync(path.join(__dirname, '..', '..', '..', 'native', 'socket-options', 'build', 'Release', 'socket_options.node'));
const required = process.platform === 'linux' && (BUILT || process.env.CI === 'true');
if (!required) process.stderr.write(`kernelUnsentBytes specs skipped: socket options addon not built (${socketOptionsUnavailable() ?? 'not Linux'})\n`);

/** What the kernel may queue beyond TCP_NOTSENT_LOWAT: the segment being filled when the mark was crossed (64 KiB GSO at most). */
const SEGMENT_SLACK = 64 * 1024;

/** tx_queue of the row with these ports, parsed independently (whitespace split); TIME_WAIT rows skipped. */
function txQueue(localPort: number, remotePort: number): number | undefined {
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5 || parseInt(f[3], 16) === 6) continue;
      if (parseInt(f[1].split(':')[1], 16) === localPort && parseInt(f[2].split(':')[1], 16) === remotePort) return parseInt(f[4].split(':')[0], 16);
    }
  }
  return undefined;
}

interface Served {
  handle: StreamHandle;
  socket: net.Socket;
}

/** `/stream?events=N&eventBytes=B[&kernelUnsentBytes=K]`: N events of B bytes of data through sendFlow. */
async function harness(): Promise<{ port: number; served: Served[]; close(): Promise<void> }> {
  const served: Served[] = [];
  const server = http.createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const n = Number(q.get('events'));
    const event = { data: 'x'.repeat(Number(q.get('eventBytes'))) };
    const k = q.get('kernelUnsentBytes');
    const handle = sendFlow(res, fromIterable((function* () { for (let i = 0; i < n; i++) yield event; })()), {
      kernelUnsentBytes: k === null ? undefined : Number(k),
      // A synchronous source fills a whole prefetch in one tick: 4 events of 16 KiB stay in the budget.
      prefetch: 4,
      stallTimeoutMs: 0,
      heartbeatMs: 0,
    });
    served.push({ handle, socket: req.socket });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    served,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function connect(port: number, query: string): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  socket.write(`GET /stream?${query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  return socket;
}

/** A client that stops reading at once; resolves with the gateway side's kernel send queue once nothing moves. */
async function stalledQueue(port: number, served: Served[], query: string): Promise<{ tx: number; bytes: number }> {
  const index = served.length;
  const client = await connect(port, query);
  client.pause();
  try {
    await waitFor(() => served.length > index && served[index].handle.state().socketFull, 10_000);
    const { socket, handle } = served[index];
    let last = -1;
    let tx = -1;
    // Settled: the queue read the same twice, 100 ms apart.
    await waitFor(() => {
      tx = txQueue(socket.localPort as number, socket.remotePort as number) ?? -1;
      const settled = tx >= 0 && tx === last;
      last = tx;
      return settled;
    }, 10_000, 100);
    return { tx, bytes: handle.state().bytes };
  } finally {
    client.destroy();
  }
}

/** Bytes/s of a client that reads everything as it comes. */
async function readRate(port: number, query: string, totalBytes: number): Promise<number> {
  const client = await connect(port, query);
  const started = process.hrtime.bigint();
  let got = 0;
  client.on('data', (b: Buffer) => (got += b.length));
  // Bounded at 20 s; the timer is cleared once the stream closed, so the file leaves none behind.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise((r) => client.once('close', r)), new Promise((r) => (timer = setTimeout(r, 20_000)))]);
  clearTimeout(timer);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  client.destroy();
  expect(got).toBeGreaterThanOrEqual(totalBytes);
  return got / seconds;
}

(required ? describe : describe.skip)('kernelUnsentBytes (TCP_NOTSENT_LOWAT on the client socket)', () => {
  let h: Awaited<ReturnType<typeof harness>>;
  beforeEach(async () => (h = await harness()));
  afterEach(() => h.close());

  it("keeps a stalled client's kernel send queue under the default bound (/proc/net/tcp)", async () => {
    const { tx } = await stalledQueue(h.port, h.served, 'events=2000&eventBytes=4096');
    expect(tx).toBeGreaterThan(0);
    expect(tx).toBeLessThanOrEqual(DEFAULT_KERNEL_UNSENT_BYTES + SEGMENT_SLACK);
  });

  it('keeps it under a configured bound, and kernelUnsentBytes 0 leaves the autotuned queue', async () => {
    const bounded = await stalledQueue(h.port, h.served, 'events=2000&eventBytes=4096&kernelUnsentBytes=32768');
    expect(bounded.tx).toBeLessThanOrEqual(32 * 1024 + SEGMENT_SLACK);
    const unbounded = await stalledQueue(h.port, h.served, 'events=2000&eventBytes=4096&kernelUnsentBytes=0');
    // The kernel's own send buffer (tcp_wmem, MBs) fills before res.write() returns false.
    expect(unbounded.tx).toBeGreaterThan(4 * bounded.tx);
    expect(unbounded.bytes).toBeGreaterThan(bounded.bytes + unbounded.tx / 2);
  });

  it("does not slow a fast client: bytes/s with the default bound vs kernelUnsentBytes 0, same run", async () => {
    const events = 2048;
    const eventBytes = 16 * 1024;
    const total = events * eventBytes;
    const rates = { bounded: 0, unbounded: 0 };
    // Interleaved, so a busy moment of the machine hits both alike.
    for (let i = 0; i < 2; i++) {
      rates.unbounded += await readRate(h.port, `events=${events}&eventBytes=${eventBytes}&kernelUnsentBytes=0`, total);
      rates.bounded += await readRate(h.port, `events=${events}&eventBytes=${eventBytes}`, total);
    }
    expect(rates.bounded / rates.unbounded).toBeGreaterThan(0.5);
  }, 120_000);
});
