import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport } from '../helpers';

/** An upstream server and a gateway with one resumable passthrough route (`/events`, terminator `[DONE]`) in front of it. */
async function resumableGateway(
  handler: http.RequestListener,
  logs: CaptureTransport,
): Promise<{ upstream: http.Server; gw: RunningGateway; close(): Promise<void> }> {
  const upstream = http.createServer(handler);
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/events`;
  const config = parseConfig({
    port: 0,
    upstream: { url: 'http://127.0.0.1:1' },
    routes: [{ path: '/events', provider: 'passthrough', url, resumable: true, terminator: { data: '[DONE]' } }],
  });
  const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  return {
    upstream,
    gw,
    async close() {
      await gw.close();
      upstream.closeAllConnections();
      await new Promise<void>((r) => upstream.close(() => r()));
    },
  };
}

describe('gateway resumable passthrough route', () => {
  let t: Awaited<ReturnType<typeof resumableGateway>>;
  const seenLastEventIds: string[] = [];
  const logs = new CaptureTransport();

  beforeAll(async () => {
    let n = 0;
    t = await resumableGateway((req, res) => {
      seenLastEventIds.push(String(req.headers['last-event-id'] ?? ''));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (n++ === 0) {
        res.write('retry: 10\nid: 1\ndata: one\n\nid: 2\ndata: two\n\n');
        setTimeout(() => res.socket?.destroy(), 30); // drop mid-stream
      } else {
        res.end('id: 3\ndata: three\n\ndata: [DONE]\n\n');
      }
    }, logs);
  });
  afterAll(() => t.close());

  it('reconnects a dropped upstream with Last-Event-ID and relays one seamless stream', async () => {
    const res = await fetch(`${t.gw.url}/events`, { headers: { 'last-event-id': '0' } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toBe('id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\ndata: [DONE]\n\n');
    expect(seenLastEventIds).toEqual(['0', '2']);
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'completed' });
  });
});

describe('gateway resumable passthrough route: upstream connections', () => {
  let t: Awaited<ReturnType<typeof resumableGateway>>;
  let connections = 0;
  const logs = new CaptureTransport();

  beforeAll(async () => {
    t = await resumableGateway((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: one\n\ndata: [DONE]\n\n');
      setTimeout(() => res.end(), 100); // the body ends a little after the terminator, as many servers do
    }, logs);
    t.upstream.on('connection', () => connections++);
  });
  afterAll(() => t.close());

  it('reads the upstream body to its end after the terminator, so the next stream reuses the connection', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${t.gw.url}/events`);
      expect(await res.text()).toBe('id: 1\ndata: one\n\ndata: [DONE]\n\n');
      // The upstream ends its body 100 ms after [DONE]; give the socket time to return to the pool.
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(connections).toBe(1);
  });
});
