import http from 'node:http';
import { getEventListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { awaitDelivery, type DeliveryEnd } from '../../../src/express/bridge/await-delivery';
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
