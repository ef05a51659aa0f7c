import http from 'node:http';
import { getEventListeners } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { awaitDelivery, writeWhole, WHOLE_SLICE_BYTES, type DeliveryEnd, type WholeWrite } from '../../../src/express/bridge/await-delivery';
import { CallSignal } from '../../../src/http/node-hooks';
import { RawClient, trackOpen, waitFor } from '../../harness/net';

// awaitDelivery over real sockets: a response ended with a body far larger than the kernel's
// queues take from a client that does not read.

const BODY = Buffer.alloc(4 * 1024 * 1024, 'x');

interface Served {
  port: number;
  /** The response of the request served, once it ended its body, and what awaitDelivery resolved. */
  ended: Promise<Ended>;
}

interface Ended {
  res: http.ServerResponse;
  end: Promise<DeliveryEnd>;
  /** Node's own `'finish'` and `'close'` listeners, before the watch. */
  before: { finish: number; close: number };
}

let server: http.Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server that ends each response with {@link BODY} and waits for its delivery. */
async function serve(stallMs: number, signal?: InstanceType<typeof CallSignal>): Promise<Served> {
  let onEnded!: (v: Ended) => void;
  const ended = new Promise<Ended>((r) => (onEnded = r));
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-length': BODY.length }).end(BODY);
    const before = { finish: res.listenerCount('finish'), close: res.listenerCount('close') };
    onEnded({ res, end: awaitDelivery(res, stallMs, signal), before });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const s = server;
  s.once('close', trackOpen(() => s.close()));
  return { port: (server.address() as AddressInfo).port, ended };
}

/** No listener of the watch is left on the response. */
function noWatchLeft({ res, before }: Ended): void {
  expect(getEventListeners(res, 'finish').length).toBeLessThanOrEqual(before.finish);
  expect(getEventListeners(res, 'close').length).toBeLessThanOrEqual(before.close);
}

describe('awaitDelivery', () => {
  it("resolves 'delivered' once a reader took the body into the kernel", async () => {
    const { port, ended } = await serve(300);
    const client = await RawClient.request(port, '/');
    client.readAll();
    const served = await ended;
    const { end } = served;
    expect(await end).toBe('delivered');
    noWatchLeft(served);
    await waitFor(() => client.bytesRead > BODY.length);
  });

  it("resolves 'stalled' and resets the connection of a client that reads nothing for stallMs", async () => {
    const { port, ended } = await serve(200);
    const client = await RawClient.request(port, '/');
    const served = await ended;
    const { end } = served;
    const startedAt = Date.now();
    expect(await end).toBe('stalled');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(190);
    noWatchLeft(served);
    client.readAll();
    expect(await client.waitClosed()).toBe(true);
    expect(client.bytesRead).toBeLessThan(BODY.length);
  });

  it("resolves 'client_closed' when the client leaves first", async () => {
    const { port, ended } = await serve(0);
    const client = await RawClient.request(port, '/');
    const served = await ended;
    const { end } = served;
    client.destroy();
    expect(await end).toBe('client_closed');
    noWatchLeft(served);
  });

  it("resolves 'aborted' and resets the connection when the signal aborts", async () => {
    const signal = new CallSignal();
    const { port, ended } = await serve(0, signal);
    const client = await RawClient.request(port, '/');
    const served = await ended;
    const { end } = served;
    signal.abort(new Error('shutdown'));
    expect(await end).toBe('aborted');
    noWatchLeft(served);
    expect(signal.listeners ?? []).toHaveLength(0);
    client.readAll();
    expect(await client.waitClosed()).toBe(true);
  });
});

describe('writeWhole', () => {
  /** A server writing `body` with writeWhole; resolves its count and delivery once a request came. */
  async function serveWhole(body: Buffer, stallMs: number): Promise<{ port: number; served: Promise<{ write: WholeWrite; end: Promise<DeliveryEnd> }> }> {
    let onServed!: (v: { write: WholeWrite; end: Promise<DeliveryEnd> }) => void;
    const served = new Promise<{ write: WholeWrite; end: Promise<DeliveryEnd> }>((r) => (onServed = r));
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': body.length });
      const write = writeWhole(res, body);
      onServed({ write, end: awaitDelivery(res, stallMs, undefined, write.handed) });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as AddressInfo).port, served };
  }

  it('hands the body to the kernel slice by slice as the client reads, and it arrives whole', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = i % 251;
    const { port, served } = await serveWhole(body, 0);
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const { write, end } = await served;
    await new Promise((r) => setTimeout(r, 200));
    const stopped = write.handed();
    // The client reads nothing: the kernel's queues hold a part, the rest waits slice by slice.
    expect(stopped).toBeLessThan(body.length);
    expect(stopped % WHOLE_SLICE_BYTES).toBe(0);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.resume();
    expect(await end).toBe('delivered');
    expect(write.handed()).toBe(body.length);
    await waitFor(() => Buffer.concat(chunks).length >= body.length);
    const got = Buffer.concat(chunks);
    expect(got.subarray(got.indexOf('\r\n\r\n') + 4).equals(body)).toBe(true);
    socket.destroy();
  });

  it('is not cut while a client reads it steadily, a little every 100 ms', async () => {
    // Past what loopback's kernel queues take, so the client's reads pace the rest.
    const body = Buffer.alloc(12 * 1024 * 1024, 'y');
    const { port, served } = await serveWhole(body, 400);
    const socket = net.connect(port, '127.0.0.1');
    let got = 0;
    socket.on('data', (c: Buffer) => (got += c.length));
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const reader = setInterval(() => {
      socket.resume();
      setTimeout(() => socket.pause(), 2);
    }, 100);
    try {
      const { end } = await served;
      expect(await end).toBe('delivered');
    } finally {
      clearInterval(reader);
      socket.destroy();
    }
    expect(got).toBeGreaterThan(0);
  }, 30_000);
});
