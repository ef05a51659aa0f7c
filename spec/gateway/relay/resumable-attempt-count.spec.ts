import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { sleep, waitFor } from '../../harness/net';
import { CaptureTransport, resumableGateway, upstreamCounts } from '../helpers';

// A stream that ends while it waits to retry its upstream's first failure counts the one request
// the upstream got, by that request's outcome, and no retry: the attempt it waited for never ran.
// The resumable passthrough route opens through connectSse, the OpenAI route through withRetries;
// both count alike.

const CHAT = { method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ model: 'm', stream: true, messages: [] }) };
const ROUTES = [
  { name: 'an OpenAI route', routes: undefined, ...CHAT },
  { name: 'a resumable passthrough route', routes: [{ path: '/events', provider: 'passthrough', resumable: true }], method: 'GET', path: '/events', body: undefined },
];

/** One request, destroyed when `leave` resolves; resolves with its status (0 when it had none) once closed. */
function askUntil(port: number, method: string, path: string, body: string | undefined, leave: Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    let status = 0;
    const req = http.request({ method, host: '127.0.0.1', port, path, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      status = res.statusCode ?? 0;
      res.resume();
      res.on('close', () => resolve(status));
    });
    req.on('error', () => resolve(status));
    req.end(body);
    void leave.then(() => req.destroy());
  });
}

describe.each(ROUTES)('a stream that ends during its first backoff, on $name', ({ routes, method, path, body }) => {
  let upstream: http.Server;
  let requests = 0;
  let gw: RunningGateway;
  let logs: CaptureTransport;

  async function start(totalMs: number): Promise<void> {
    requests = 0;
    upstream = http.createServer((req, res) => {
      requests++;
      req.resume();
      // Retry-After holds the second attempt for 20 s.
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '20' });
      res.end(JSON.stringify({ error: { message: 'busy', type: 'server_error' } }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    logs = new CaptureTransport();
    const config = { port: 0, upstream: { url }, retry: { maxDelayMs: 30_000 }, timeouts: { totalMs }, ...(routes === undefined ? {} : { routes }) };
    gw = await startGateway(parseConfig(config), { logger: createLogger({ transports: [logs] }) });
  }
  afterEach(async () => {
    await gw.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it('counts one attempt, its 503, and no retry when the client leaves', async () => {
    await start(0);
    let leave: () => void = () => undefined;
    const answered = askUntil(gw.port, method, path, body, new Promise((r) => (leave = r)));
    await waitFor(() => requests === 1 && gw.app.gateway.activeStreams === 1);
    await sleep(50);
    leave();
    await answered;
    await waitFor(() => logs.lines.some((l) => l.message === 'stream'));
    expect(requests).toBe(1);
    expect(logs.lines.find((l) => l.message === 'stream')).toMatchObject({ attempts: 1 });
    expect(await upstreamCounts(gw)).toEqual({ requests: new Map([['http_503', 1]]), retries: 0 });
  });

  it('counts one attempt, its 503, and no retry when totalMs ends the wait', async () => {
    await start(300);
    const status = await askUntil(gw.port, method, path, body, new Promise(() => undefined));
    expect(status).toBeGreaterThanOrEqual(500);
    await waitFor(() => logs.lines.some((l) => l.message === 'stream'));
    expect(requests).toBe(1);
    expect(logs.lines.find((l) => l.message === 'stream')).toMatchObject({ attempts: 1, outcome: 'timeout' });
    expect(await upstreamCounts(gw)).toEqual({ requests: new Map([['http_503', 1]]), retries: 0 });
  });
});

// Once streaming, each reconnect is one more upstream request, counted by its outcome even when
// it is the last one: refused by the upstream, or still in flight as the client leaves.
describe('a resumable stream whose last reconnect does not answer a stream', () => {
  let requests = 0;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  let close: () => Promise<void>;

  async function start(second: (res: http.ServerResponse) => void): Promise<void> {
    requests = 0;
    ({ gw, logs, close } = await resumableGateway((req, res) => {
      req.resume();
      if (requests++ === 0) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('id: 1\ndata: a\n\n');
        setTimeout(() => res.destroy(), 50);
        return;
      }
      second(res);
    }));
  }
  afterEach(() => close());

  it('counts a reconnect answered 404 by its status', async () => {
    await start((res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"gone"}}');
    });
    const status = await askUntil(gw.port, 'GET', '/events', undefined, new Promise(() => undefined));
    expect(status).toBe(200);
    await waitFor(() => logs.lines.some((l) => l.message === 'stream'));
    expect(requests).toBe(2);
    expect(logs.lines.find((l) => l.message === 'stream')).toMatchObject({ attempts: 2 });
    expect(await upstreamCounts(gw)).toEqual({ requests: new Map([['ok', 1], ['http_404', 1]]), retries: 0 });
  });

  it('counts a reconnect in flight as the client leaves as aborted', async () => {
    await start(() => undefined); // the reconnect never answers
    let leave: () => void = () => undefined;
    const answered = askUntil(gw.port, 'GET', '/events', undefined, new Promise((r) => (leave = r)));
    await waitFor(() => requests === 2);
    await sleep(50);
    leave();
    await answered;
    await waitFor(() => logs.lines.some((l) => l.message === 'stream'));
    expect(logs.lines.find((l) => l.message === 'stream')).toMatchObject({ attempts: 2 });
    expect(await upstreamCounts(gw)).toEqual({ requests: new Map([['ok', 1], ['aborted', 1]]), retries: 0 });
  });
});
