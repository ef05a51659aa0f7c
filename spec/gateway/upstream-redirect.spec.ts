import type http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * An upstream that answers a redirect is not followed unless its route says so: the request
 * body (the prompt) and the route's key would otherwise go to an address nobody configured.
 */
describe('an upstream redirect', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let elsewhere: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  let elsewhereCalls = 0;

  beforeAll(async () => {
    elsewhere = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      elsewhereCalls++;
      req.resume();
      if (req.headers.accept === 'application/json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'moved' } }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'moved' } }] })}\n\ndata: [DONE]\n\n`);
    });
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      res.writeHead(307, { location: `http://127.0.0.1:${elsewhere.port}/v1/chat/completions` }).end();
    });
    const url = `http://127.0.0.1:${upstream.port}/v1/chat/completions`;
    const route = { provider: 'openai', url, apiKey: 'sk-test' };
    const config = parseConfig({
      port: 0,
      retry: { baseDelayMs: 1, maxAttempts: 3 },
      routes: [
        { ...route, path: '/bytes/v1/chat/completions' },
        { ...route, path: '/events/v1/chat/completions', policy: { relay: 'events' } },
        { ...route, path: '/nonstream/v1/chat/completions', stream: false },
        { ...route, path: '/follow/v1/chat/completions', followRedirects: true },
      ],
    });
    gateway = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
    await elsewhere.close();
  });

  async function call(path: string, stream: boolean): Promise<{ status: number; text: string }> {
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  }

  it.each([
    ['/bytes', true],
    ['/events', true],
    ['/nonstream', false],
    ['/bytes', false],
  ])('is refused with a typed 502, never followed and never retried (%s, stream: %s)', async (prefix, stream) => {
    const before = elsewhereCalls;
    const { status, text } = await call(`${prefix}/v1/chat/completions`, stream);
    expect(status).toBe(502);
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('ERR_TIDEGATE_UPSTREAM_REDIRECT');
    expect(error.message).toContain('HTTP 307');
    expect(text).not.toContain(String(elsewhere.port));
    expect(text).not.toContain(String(upstream.port));
    expect(elsewhereCalls).toBe(before);
    const line = logs.streams().at(-1) as Record<string, unknown>;
    expect(line).toMatchObject({ errorCode: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', status: 502 });
    expect(JSON.stringify(line)).not.toContain(String(elsewhere.port));
  });

  it('is followed on a route with followRedirects: true', async () => {
    const before = elsewhereCalls;
    const { status, text } = await call('/follow/v1/chat/completions', true);
    expect(status).toBe(200);
    expect(text).toContain('"content":"moved"');
    expect(elsewhereCalls).toBe(before + 1);
  });
});
