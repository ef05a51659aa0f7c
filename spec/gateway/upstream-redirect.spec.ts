import type http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * An upstream that answers a redirect is not followed unless its route says so, and then only on
 * the upstream's own origin and at most 20 times: the request body (the prompt) and the route's
 * key would otherwise go to an address nobody configured.
 */
describe('an upstream redirect', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let elsewhere: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  let elsewhereCalls = 0;
  let loopCalls = 0;

  function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (req.headers.accept === 'application/json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'moved' } }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'moved' } }] })}\n\ndata: [DONE]\n\n`);
  }

  beforeAll(async () => {
    elsewhere = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      elsewhereCalls++;
      req.resume();
      answer(req, res);
    });
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      const path = req.url ?? '';
      if (path.startsWith('/loop/')) {
        loopCalls++;
        res.writeHead(307, { location: `/loop/v1/chat/completions?hop=${loopCalls}&key=sk-hop-secret` }).end();
      } else if (path.startsWith('/same/')) {
        res.writeHead(308, { location: '/final/v1/chat/completions' }).end();
      } else if (path.startsWith('/final/')) {
        answer(req, res);
      } else {
        res.writeHead(307, { location: `http://127.0.0.1:${elsewhere.port}/v1/chat/completions` }).end();
      }
    });
    const base = `http://127.0.0.1:${upstream.port}`;
    const url = `${base}/v1/chat/completions`;
    const route = { provider: 'openai', url, apiKey: 'sk-test' };
    const follow = { ...route, followRedirects: true };
    const loop = { ...follow, url: `${base}/loop/v1/chat/completions` };
    const config = parseConfig({
      port: 0,
      retry: { baseDelayMs: 1, maxAttempts: 3 },
      routes: [
        { ...route, path: '/bytes/v1/chat/completions' },
        { ...route, path: '/events/v1/chat/completions', policy: { relay: 'events' } },
        { ...route, path: '/nonstream/v1/chat/completions', stream: false },
        { ...follow, path: '/follow/v1/chat/completions' },
        { ...follow, path: '/same/v1/chat/completions', url: `${base}/same/v1/chat/completions` },
        { ...follow, path: '/same-resume/v1/chat/completions', url: `${base}/same/v1/chat/completions`, resume: true },
        { ...follow, path: '/follow-resume/v1/chat/completions', resume: true },
        { ...loop, path: '/loop-bytes/v1/chat/completions' },
        { ...loop, path: '/loop-events/v1/chat/completions', policy: { relay: 'events' } },
        { ...loop, path: '/loop-nonstream/v1/chat/completions', stream: false },
        { ...loop, path: '/loop-resume/v1/chat/completions', resume: true },
        { ...loop, provider: 'anthropic', path: '/loop-anthropic/v1/messages' },
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
    expect(line).toMatchObject({ outcome: 'upstream_redirect', errorCode: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', status: 502 });
    expect(JSON.stringify(line)).not.toContain(String(elsewhere.port));
  });

  it.each([
    ['/same', true],
    ['/same', false],
    ['/same-resume', true],
  ])('is followed on its own origin on a route with followRedirects: true (%s, stream: %s)', async (prefix, stream) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`, stream);
    expect(status).toBe(200);
    expect(text).toContain('"content":"moved"');
  });

  it.each([
    ['/follow', true],
    ['/follow', false],
    ['/follow-resume', true],
  ])('to another origin is refused on a route with followRedirects: true, nothing sent there (%s, stream: %s)', async (prefix, stream) => {
    const before = elsewhereCalls;
    const { status, text } = await call(`${prefix}/v1/chat/completions`, stream);
    expect(status).toBe(502);
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('ERR_TIDEGATE_UPSTREAM_REDIRECT');
    expect(error.message).toContain('to another origin');
    expect(text).not.toContain(String(elsewhere.port));
    expect(elsewhereCalls).toBe(before);
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_redirect', errorCode: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', status: 502 });
  });

  it.each([
    ['/loop-bytes', true],
    ['/loop-events', true],
    ['/loop-nonstream', false],
    ['/loop-resume', true],
  ])('in a loop ends after 20 followed redirects with a typed 502, not retried (%s, stream: %s)', async (prefix, stream) => {
    loopCalls = 0;
    const { status, text } = await call(`${prefix}/v1/chat/completions`, stream);
    expect(status).toBe(502);
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('ERR_TIDEGATE_UPSTREAM_REDIRECT');
    expect(error.message).toContain('kept redirecting');
    expect(error.message).toContain('HTTP 307');
    expect(loopCalls).toBe(21);
    expect(text).not.toContain(String(upstream.port));
    const line = logs.streams().at(-1) as Record<string, unknown>;
    expect(line).toMatchObject({ outcome: 'upstream_redirect', attempts: 1, errorCode: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', status: 502 });
    expect(JSON.stringify(line)).not.toContain('sk-hop-secret');
    expect(JSON.stringify(line)).not.toContain('hop=');
  });

  it("in a loop answers an Anthropic route in Anthropic's error shape", async () => {
    const res = await fetch(`${gateway.url}/loop-anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'error', error: { code: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', message: expect.stringContaining('kept redirecting') } });
  });

  it('is counted as redirect in tidegate_upstream_requests_total', async () => {
    await call('/loop-bytes/v1/chat/completions', true);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/tidegate_upstream_requests_total\{route="\/loop-bytes\/v1\/chat\/completions",outcome="redirect"\} [1-9]/);
    expect(metrics).toMatch(/tidegate_streams_total\{route="\/loop-bytes\/v1\/chat\/completions",outcome="upstream_redirect"\} [1-9]/);
  });
});
