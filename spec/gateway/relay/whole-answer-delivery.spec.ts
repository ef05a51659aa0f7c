import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport } from '../helpers';
import { RawClient, trackOpen, waitFor } from '../../harness/net';

// A whole (non-stream) answer over real sockets: it holds its stream slot until Node handed it
// to the kernel, and a client that stops reading it is cut after the stall timeout.

/** 4 MiB of JSON: far more than a client that does not read lets into the kernel's queues. */
const ANSWER = Buffer.from(JSON.stringify({ object: 'list', data: 'x'.repeat(4 * 1024 * 1024) }));
const ASK = JSON.stringify({ model: 'm', messages: [] });

let upstream: http.Server | undefined;
let gw: RunningGateway | undefined;
let logs: CaptureTransport;

/** An upstream answering every request with {@link ANSWER}, and a gateway in front of it. */
async function start(config: { limits?: Record<string, unknown>; stream?: Record<string, unknown> }): Promise<number> {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length }).end(ANSWER));
  });
  await new Promise<void>((resolve) => upstream?.listen(0, '127.0.0.1', resolve));
  const server = upstream;
  const untrack = trackOpen(() => server.close());
  server.once('close', untrack);
  logs = new CaptureTransport();
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  gw = await startGateway(
    parseConfig({ port: 0, upstream: { url }, retry: { maxAttempts: 1 }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }], ...config }),
    { logger: createLogger({ transports: [logs] }) },
  );
  return gw.port;
}

afterEach(async () => {
  await gw?.close();
  gw = undefined;
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve) ?? resolve(undefined));
  upstream = undefined;
});

/** Asks for a whole answer and reads its first 64 bytes (the status line), then nothing. */
async function unread(port: number): Promise<RawClient> {
  const client = await RawClient.request(port, '/v1/chat/completions', { method: 'POST', body: ASK, headers: { 'content-type': 'application/json' } });
  await waitFor(() => {
    client.readSome(64 - client.bytesRead);
    return client.bytesRead >= 64 || client.closed;
  });
  return client;
}

function status(client: RawClient): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(client.text())?.[1] ?? 0);
}

describe('relayWhole: a whole answer to a client that does not read', () => {
  it('holds its stream slot, so a client over maxStreamsPerClient is refused', async () => {
    const port = await start({ limits: { maxStreamsPerClient: 2 } });
    const held = [await unread(port), await unread(port)];
    expect(held.map(status)).toEqual([200, 200]);
    // Long after the gateway wrote both answers, neither has reached the kernel.
    await new Promise((r) => setTimeout(r, 200));
    expect(gw?.app.gateway.admission.streams).toBe(2);

    const over = await RawClient.request(port, '/v1/chat/completions', { method: 'POST', body: ASK, headers: { 'content-type': 'application/json' } });
    over.readAll();
    await over.waitClosed();
    expect(status(over)).toBe(429);
    expect(over.body()).toContain('ERR_TIDEGATE_CLIENT_LIMIT');
  });

  it('is cut after the stall timeout, logged stalled, and gives its slot back', async () => {
    const port = await start({ limits: { maxStreamsPerClient: 1 }, stream: { stallTimeoutMs: 300 } });
    const client = await unread(port);
    await waitFor(() => gw?.app.gateway.admission.streams === 1);

    await waitFor(() => logs.streams().length === 1, 5000);
    expect(logs.streams()[0]).toMatchObject({ outcome: 'stalled', errorCode: 'ERR_TIDEGATE_STALLED', status: 200, stream: false });
    await waitFor(() => gw?.app.gateway.admission.streams === 0);
    // The connection was reset: a read now finds it gone.
    client.readAll();
    expect(await client.waitClosed(5000)).toBe(true);
    expect(client.bytesRead).toBeLessThan(ANSWER.length);
  });

  it('is not cut while the client reads it slowly but steadily, and holds its slot until the end', async () => {
    const port = await start({ limits: { maxStreamsPerClient: 1 }, stream: { stallTimeoutMs: 400 } });
    const client = await unread(port);
    const startedAt = Date.now();
    // About 2.5 s for the answer: several stall timeouts, each with progress.
    client.readAtRate(ANSWER.length / 2.5, 50);
    await waitFor(() => client.bytesRead > ANSWER.length / 3, 5000);
    expect(gw?.app.gateway.admission.streams).toBe(1);

    await waitFor(() => client.bytesRead >= ANSWER.length, 10_000);
    client.stopReading();
    client.readAll();
    await waitFor(() => logs.streams().length === 1);
    expect(Date.now() - startedAt).toBeGreaterThan(1000);
    expect(logs.streams()[0]).toMatchObject({ outcome: 'completed', status: 200, bytes: ANSWER.length, stream: false });
    expect(client.body()).toBe(ANSWER.toString());
    await waitFor(() => gw?.app.gateway.admission.streams === 0);
  });
});
