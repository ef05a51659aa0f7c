import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { kernelSendQueueBytes } from '../../../src/express/bridge/tcp-send-queue';

const linux = process.platform === 'linux';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** tx_queue of the live row for `socket`, parsed independently (split on whitespace). */
function independentTx(socket: net.Socket): number | undefined {
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      const localPort = parseInt(f[1].split(':')[1], 16);
      const remotePort = parseInt(f[2].split(':')[1], 16);
      if (localPort === socket.localPort && remotePort === socket.remotePort && parseInt(f[3], 16) !== 6) return parseInt(f[4].split(':')[0], 16);
    }
  }
  return undefined;
}

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanup.splice(0).reverse()) c();
});

(linux ? describe : describe.skip)('kernelSendQueueBytes', () => {
  it('finds a socket in a table larger than its first read buffer (64 KiB), with 1,200 rows', async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    const accepted: net.Socket[] = [];
    srv.on('connection', (s) => {
      s.on('error', () => undefined);
      accepted.push(s);
    });
    const clients: net.Socket[] = [];
    cleanup.push(() => {
      for (const s of [...clients, ...accepted]) s.destroy();
      srv.close();
    });
    // 600 connections: 1,200 rows of ~150 bytes, about 180 KB of table.
    for (let i = 0; i < 600; i++) {
      const c = net.connect({ port, host: '127.0.0.1' });
      c.on('error', () => undefined);
      c.pause();
      clients.push(c);
    }
    for (let i = 0; i < 200 && accepted.length < 600; i++) await sleep(10);
    expect(accepted).toHaveLength(600);
    // One server socket gets a backlog its paused client never reads; the others stay idle.
    const stalled = accepted[accepted.length - 1] as net.Socket;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 400 && stalled.write(chunk); i++);
    await sleep(100);

    const want = independentTx(stalled);
    expect(want).toBeGreaterThan(0);
    expect(kernelSendQueueBytes(stalled, 0)).toBe(want);
    const idle = accepted.filter((s) => s !== stalled).map((s) => kernelSendQueueBytes(s, 60_000)); // the table just read, searched 599 times
    expect(idle.filter((tx) => tx !== 0)).toEqual([]);
  });

  it('answers undefined for a socket that is no longer in the table', async () => {
    const srv = net.createServer((s) => s.on('error', () => undefined));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    cleanup.push(() => srv.close());
    const c = net.connect({ port: (srv.address() as AddressInfo).port, host: '127.0.0.1' });
    await new Promise<void>((r) => c.once('connect', r));
    const { localPort, remotePort, localAddress, remoteAddress } = c;
    expect(kernelSendQueueBytes(c, 0)).toBe(0);
    c.destroy();
    await sleep(50);
    // A look-alike with the closed socket's ends: its row is gone (or in TIME_WAIT, which is not live).
    const ghost = { localPort, remotePort, localAddress, remoteAddress } as net.Socket;
    expect(kernelSendQueueBytes(ghost, 0)).toBeUndefined();
  });
});
