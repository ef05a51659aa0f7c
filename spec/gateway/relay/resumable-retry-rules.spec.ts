import type http from 'node:http';
import type { RunningGateway } from '../../../src/gateway/server';
import { ask, resumableGateway, type CaptureTransport } from '../helpers';

// Before its first answer a resumable route retries by the rules of every route (429, 502, 503
// and failures before a status line; never an answer the HTTP parser refused, never past
// retry.maxRetryAfterMs); once streaming it reconnects, but never waits out a Retry-After past
// that cap either.

type Script = (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void;

describe('a resumable route retrying its upstream', () => {
  let upstream: http.Server;
  let requests = 0;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  let close: () => Promise<void>;

  async function start(script: Script, retry: Record<string, number> = {}, timeouts: Record<string, number> = {}): Promise<void> {
    requests = 0;
    ({ gw, upstream, logs, close } = await resumableGateway(
      (req, res) => {
        req.resume();
        script(req, res, requests++);
      },
      { retry, timeouts },
    ));
  }
  afterEach(() => close());

  it("passes a Retry-After over maxRetryAfterMs through at once, with the upstream's status", async () => {
    await start((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '8' });
      res.end('{"error":{"message":"busy"}}');
    }, { maxRetryAfterMs: 2000 });
    const started = Date.now();
    const got = await ask(gw.port, 'GET', '/events');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(got.status).toBe(503);
    expect(got.headers['retry-after']).toBe('8');
    expect(requests).toBe(1);
  });

  it('waits out a Retry-After within maxRetryAfterMs and retries', async () => {
    await start((_req, res, index) => {
      if (index === 0) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end('{"error":{"message":"busy"}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: a\n\ndata: [DONE]\n\n');
    }, { maxRetryAfterMs: 2000 });
    const started = Date.now();
    const got = await ask(gw.port, 'GET', '/events');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(got.status).toBe(200);
    expect(got.body).toMatch(/data: a\n\n[^]*\[DONE\]/);
    expect(requests).toBe(2);
  });

  it('does not retry a status other routes do not retry (500)', async () => {
    await start((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"broken"}}');
    });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(500);
    expect(requests).toBe(1);
  });

  it("does not retry an answer Node's HTTP parser refused, and names the route, not the URL", async () => {
    await start((_req, res) => {
      // About 40 KB of headers: past Node's 16 KiB maxHeaderSize.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-padding': 'p'.repeat(40_000) });
      res.end('data: a\n\n');
    });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(502);
    expect(got.body).toContain('ERR_TIDEGATE_UPSTREAM_RESET');
    expect(got.body).toContain('upstream for route /events answered with a response that could not be parsed (HPE_HEADER_OVERFLOW)');
    expect(got.body).not.toContain('127.0.0.1');
    expect(requests).toBe(1);
    expect(logs.streams()[0]).toMatchObject({ attempts: 1, errno: 'HPE_HEADER_OVERFLOW' });
  });

  it('retries a connection reset before the status line, maxAttempts in all', async () => {
    await start((req) => req.socket.destroy());
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(502);
    expect(got.body).toContain('upstream for route /events connection failed');
    expect(requests).toBe(3);
  });

  it('ends a streaming stream whose reconnect meets a Retry-After over maxRetryAfterMs, at once', async () => {
    await start((_req, res, index) => {
      if (index === 0) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('id: 1\ndata: a\n\n');
        setTimeout(() => res.destroy(), 50);
        return;
      }
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600' });
      res.end('{"error":{"message":"slow down"}}');
    }, { maxRetryAfterMs: 2000 });
    const started = Date.now();
    const got = await ask(gw.port, 'GET', '/events');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(got.status).toBe(200);
    expect(got.body).toMatch(/data: a\n\n[^]*event: error/);
    expect(requests).toBe(2);
  });

  it('retries before the first answer by maxAttempts alone, whatever maxReconnects is', async () => {
    await start((_req, res, index) => {
      if (index < 2) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"busy"}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: a\n\ndata: [DONE]\n\n');
    }, { maxReconnects: 0 });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(200);
    expect(got.body).toMatch(/data: a\n\n[^]*\[DONE\]/);
    expect(requests).toBe(3);
  });

  it('answers a first 204 as a 2xx that opened no stream', async () => {
    await start((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(502);
    expect(got.body).toContain('ERR_TIDEGATE_UPSTREAM_NOT_STREAM');
    expect(requests).toBe(1);
  });

  it("times the wait for the first answer by firstByteMs, not idleMs, as every route does", async () => {
    await start((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('data: a\n\ndata: [DONE]\n\n');
      }, 600);
    }, {}, { idleMs: 200, firstByteMs: 5000 });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(200);
    expect(got.body).toMatch(/data: a\n\n[^]*\[DONE\]/);
    expect(requests).toBe(1);
  });

  it('names the route, not the URL, in the error frame of a stream whose upstream went away', async () => {
    await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: a\n\n');
      // The upstream stops listening, then drops the stream: every reconnect is refused.
      upstream.close();
      setTimeout(() => res.destroy(), 50);
    });
    const got = await ask(gw.port, 'GET', '/events');
    expect(got.status).toBe(200);
    expect(got.body).toMatch(/event: error\ndata: .*upstream for route \/events unreachable \(ECONNREFUSED\)/);
    expect(got.body).not.toContain('127.0.0.1');
  });
});
