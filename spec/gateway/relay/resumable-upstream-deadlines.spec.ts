import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport } from '../helpers';

// A resumable route reads its upstream through the same HTTP stack as every other route: the
// route's first-byte deadline applies to each of its connections.

describe('gateway resumable route deadlines', () => {
  let upstream: http.Server;
  let gw: RunningGateway;
  const logs = new CaptureTransport();
  let requests = 0;

  beforeAll(async () => {
    upstream = http.createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders(); // headers, then nothing
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/events`;
    const config = parseConfig({
      port: 0,
      upstream: { url: 'http://127.0.0.1:1' },
      routes: [{ path: '/events', provider: 'passthrough', url, resumable: true, terminator: { data: '[DONE]' }, timeouts: { firstByteMs: 200 }, retry: { maxAttempts: 2, baseDelayMs: 1 } }],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });
  afterAll(async () => {
    await gw.close();
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it("gives up on an upstream that sends no body byte within the route's firstByteMs, per connection", async () => {
    const started = Date.now();
    const res = await fetch(`${gw.url}/events`);
    await res.text();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(requests).toBe(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(logs.streams().at(-1)).toMatchObject({ route: '/events', outcome: 'timeout' });
  });
});
