import net from 'node:net';
import { SocketDeadline } from '../../src/http/socket-deadline';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Blocks the event loop for `ms`, bounded by the clock. */
const block = (ms: number): void => {
  const from = Date.now();
  while (Date.now() - from < ms);
};

describe('SocketDeadline', () => {
  let server: net.Server;
  let client: net.Socket;
  let peer: net.Socket;

  beforeEach(async () => {
    server = net.createServer();
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    peer = await accepted;
    await new Promise<void>((resolve) => (client.connecting ? client.once('connect', () => resolve()) : resolve()));
  });

  afterEach(async () => {
    client.destroy();
    peer.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('reads the bytes already in the socket before judging a deadline a blocked loop ran late', async () => {
    let passed = 0;
    const deadline = new SocketDeadline(30, () => passed++);
    let bytes = 0;
    client.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      deadline.refresh();
    });
    // What a plain timer of the same length would have seen when it ran.
    let bytesAtPlainTimer = -1;
    setTimeout(() => (bytesAtPlainTimer = bytes), 30);
    peer.write('x'); // in the client's socket at once (loopback), read at the next poll
    block(80);
    await sleep(10);
    expect(bytesAtPlainTimer).toBe(0); // the timer ran before the poll
    expect(bytes).toBe(1);
    expect(passed).toBe(0); // the deadline's verdict came after it, and the byte moved it
    await sleep(120); // silence now
    expect(passed).toBe(1);
  });

  it('passes once after silence, and a refresh after that does not arm it again', async () => {
    let passed = 0;
    const deadline = new SocketDeadline(20, () => passed++);
    await sleep(60);
    expect(passed).toBe(1);
    deadline.refresh();
    await sleep(60);
    expect(passed).toBe(1);
  });

  it('drops a verdict that waits for the poll when cleared meanwhile', async () => {
    let passed = 0;
    const deadline = new SocketDeadline(10, () => passed++);
    setTimeout(() => deadline.clear(), 10); // runs in the same timers phase, after the deadline's timer
    block(30);
    await sleep(40);
    expect(passed).toBe(0);
  });

  it('never passes once cleared before its time', async () => {
    let passed = 0;
    const deadline = new SocketDeadline(20, () => passed++);
    deadline.clear();
    await sleep(50);
    expect(passed).toBe(0);
  });
});
