import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { waitFor } from '../harness/net';
import { ask, CaptureTransport } from './helpers';

// A stream waiting out an upstream's Retry-After when the drain starts starts no new attempt: it
// answers at once with the upstream's last answer (status, Retry-After, body), so its client
// retries elsewhere instead of waiting through the grace to be cut.

const CHAT = { method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ model: 'm', stream: true, messages: [] }) };
// A resumable passthrough route opens its upstream through connectSse, with its own backoff.
const ROUTES = [
  { name: 'an OpenAI route', routes: undefined, ...CHAT },
  { name: 'a resumable passthrough route', routes: [{ path: '/events', provider: 'passthrough', resumable: true }], method: 'GET', path: '/events', body: undefined },
];

describe.each(ROUTES)('a stream waiting to retry its upstream at shutdown, on $name', ({ routes, method, path, body }) => {
  let upstream: http.Server;
  let requests = 0;
  let gw: RunningGateway;
  let logs: CaptureTransport;

  beforeEach(async () => {
    requests = 0;
    upstream = http.createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '20' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    logs = new CaptureTransport();
    gw = await startGateway(parseConfig({ port: 0, upstream: { url }, ...(routes === undefined ? {} : { routes }) }), { logger: createLogger({ transports: [logs] }) });
  });
  afterEach(async () => {
    await gw.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it("gets the upstream's 429 with its Retry-After as the drain starts, not after the grace", async () => {
    const answer = ask(gw.port, method, path, body);
    // The first attempt got its 429; the stream now waits 20 s for the second.
    await waitFor(() => requests === 1 && gw.app.gateway.activeStreams === 1);
    const started = Date.now();
    const stopped = gw.shutdown(15_000);
    const got = await answer;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(got.status).toBe(429);
    expect(got.headers['retry-after']).toBe('20');
    expect(JSON.parse(got.body)).toMatchObject({ error: { message: 'slow down' } });
    await stopped;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(requests).toBe(1);
    const line = logs.lines.find((l) => l.message === 'stream');
    expect(line).toMatchObject({ status: 429, upstreamStatus: 429, attempts: 1 });
    // The second attempt never ran: no retry is counted.
    const metrics = await gw.app.gateway.metrics.registry.metrics();
    expect(metrics).not.toMatch(/^tidegate_upstream_retries_total\{[^}]*\} [1-9]/m);
  });

  it('is retried as before while the gateway is not draining', async () => {
    // The control: without a drain, the same request waits for its second attempt.
    const answer = ask(gw.port, method, path, body);
    await waitFor(() => requests === 1 && gw.app.gateway.activeStreams === 1);
    let settled = false;
    void answer.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(settled).toBe(false);
    expect(gw.app.gateway.activeStreams).toBe(1);
    await gw.shutdown(5_000);
    await answer;
  });
});
