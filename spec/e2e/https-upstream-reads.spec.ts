/**
 * An https upstream under the byte relay. TLS sockets do not read through the
 * gateway's `onread` (the https agent leaves it alone), so their reads are not sized to the
 * budget: `readsSized()` must say so, or the ReadGate keeps no room for what the reader takes
 * in unasked (relay.ts UNSIZED_READER_BYTES).
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RunningGateway } from '../../src/gateway/server';
import { openUpstreamStream, upstreamAgent, type UpstreamStream } from '../../src/http/request';
import type { CaptureTransport } from '../gateway/helpers';
import { RawClient, waitFor } from '../harness/net';
import { sampleBuffered, SSE_HEAD, testGateway } from '../harness/relay-harness';
import { CERT, KEY } from '../harness/tls-fixture';

// The certificate is self-signed for 127.0.0.1 (tls-fixture.ts).

const EVENT = `data: ${'t'.repeat(1000 - 8)}\n\n`;
const COUNT = 8000; // 8 MB

describe('https upstream and sized reads', () => {
  let server: https.Server;
  let url: string;
  // The upstream agent trusts the test's certificate (agent options override the request's).
  const agentOptions = (upstreamAgent(new URL('https://127.0.0.1')) as https.Agent).options as https.AgentOptions;

  beforeAll(async () => {
    agentOptions.ca = CERT;
    server = https.createServer({ key: KEY, cert: CERT }, (req, res) => {
      req.resume();
      res.writeHead(200, SSE_HEAD);
      let i = 0;
      const write = (): void => {
        while (i < COUNT && !res.destroyed) {
          i += 10;
          if (!res.write(EVENT.repeat(10))) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    delete agentOptions.ca;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  // TLS reads are not sized (UpstreamRequest.readBytes: "plain HTTP only; TLS sockets read as
  // Node does"; UpstreamStream.readsSized: false when "a TLS socket reads as Node does"): only
  // sockets of the http agent get a sized read call, never a TLSSocket (`socket.encrypted`).
  it('readsSized() is false for an https upstream (TLS reads are not sized by readBytes)', async () => {
    let stream: UpstreamStream | undefined;
    try {
      stream = await openUpstreamStream({ url, method: 'GET', readBytes: () => 1024 });
      expect(stream.readsSized()).toBe(false);
    } finally {
      stream?.body.subscribeWithDemand({ error: () => undefined }).cancel();
    }
  });

  describe('through the gateway', () => {
    let gw: RunningGateway;
    let logs: CaptureTransport;
    const clients: RawClient[] = [];
    beforeAll(async () => {
      const route = (path: string, budget: number): Record<string, unknown> => ({ path, provider: 'passthrough', url: `${url}/sse`, policy: { maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 } });
      ({ gw, logs } = await testGateway(url, [route('/tls', 48 * 1024), route('/tls-min', 30 * 1024)], { heartbeatMs: 0 }));
    });
    afterEach(() => {
      for (const c of clients.splice(0)) c.destroy();
    });
    afterAll(async () => {
      await gw.close();
    });

    // overflow: pause never overflows: the gate keeps room for the unsized TLS reads
    // (readsSized() false above) instead of ending with ERR_TIDEGATE_OVERFLOW, and does not wait
    // for room forever either (the ReadGate wait in spec/gateway/relay/byte-relay-sized-reads.spec.ts,
    // gzip at 48 KiB; the smallest budget is its /gzmin case).
    it.each([
      ['/tls', 48 * 1024],
      ['/tls-min', 30 * 1024],
    ])('a paused stream from an https upstream (%s) stays within maxBufferedBytes and relays every byte', async (path, budget) => {
      const before = logs.streams().length;
      const client = await RawClient.request(gw.port, path);
      clients.push(client);
      client.readSome(1000);
      const gauge = await sampleBuffered(gw.url, 800);
      client.readAll();
      expect(await client.waitClosed(15_000)).toBe(true);
      const mine = (): Record<string, unknown> | undefined => (logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === path);
      await waitFor(() => mine() !== undefined, 5000);
      const line = mine() as Record<string, unknown>;
      expect(line.outcome).toBe('completed');
      expect(client.body() === EVENT.repeat(COUNT)).toBe(true);
      expect(gauge).toBeLessThanOrEqual(budget);
      expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
    });
  });
});
