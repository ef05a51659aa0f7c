import type http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * Every stream relay, resumable ones included, takes the upstream's event stream whatever the
 * case of its media type and the whitespace before its parameters (RFC 9110 §8.3.1), and a 2xx
 * that opens no stream gets the typed 502, without the upstream's header value or body in it.
 */
describe('the content type of an upstream stream', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  const chunk = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'spelled' } }] })}\n\n`;

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      if ((req.url ?? '').startsWith('/created/')) {
        res.writeHead(201, { 'content-type': 'text/event-stream' }).end(`${chunk}data: [DONE]\n\n`);
        return;
      }
      if ((req.url ?? '').startsWith('/html/')) {
        res.writeHead(200, { 'content-type': 'text/html; note=sk-upstream-secret' }).end('<html>upstream-body</html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'TEXT/Event-Stream ; charset=latin1' });
      res.end(`${chunk}data: [DONE]\n\n`);
    });
    const base = `http://127.0.0.1:${upstream.port}`;
    const route = { provider: 'openai', url: `${base}/sse/v1/chat/completions`, apiKey: 'sk-test' };
    const html = { ...route, url: `${base}/html/v1/chat/completions` };
    const config = parseConfig({
      port: 0,
      routes: [
        { ...route, path: '/bytes/v1/chat/completions' },
        { ...route, path: '/events/v1/chat/completions', policy: { relay: 'events' } },
        { ...route, path: '/resume/v1/chat/completions', resume: true },
        { ...html, path: '/other-bytes/v1/chat/completions' },
        { ...html, path: '/other-events/v1/chat/completions', policy: { relay: 'events' } },
        { ...html, path: '/other-resume/v1/chat/completions', resume: true },
        { provider: 'passthrough', url: `${base}/sse/events`, path: '/resumable/v1/chat/completions', resumable: true, terminator: { data: '[DONE]' } },
        { provider: 'passthrough', url: `${base}/html/events`, path: '/other-resumable/v1/chat/completions', resumable: true },
        { provider: 'passthrough', url: `${base}/created/events`, path: '/created-resumable/v1/chat/completions', resumable: true },
      ],
    });
    gateway = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  async function call(path: string): Promise<{ status: number; text: string }> {
    if (path.includes('resumable/')) {
      const res = await fetch(`${gateway.url}${path}`, { signal: AbortSignal.timeout(10_000) });
      return { status: res.status, text: await res.text() };
    }
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  }

  it.each(['/bytes', '/events', '/resume', '/resumable'])('is matched case-insensitively, whitespace before its parameters allowed (%s)', async (prefix) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`);
    expect(status).toBe(200);
    expect(text).toContain('"content":"spelled"');
    expect(text).toContain('data: [DONE]');
  });

  it.each(['/other-bytes', '/other-events', '/other-resume', '/other-resumable'])('when not an event stream, answers a typed 502 that repeats none of the upstream header (%s)', async (prefix) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`);
    expect(status).toBe(502);
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_NOT_STREAM', message: `upstream for route ${prefix}/v1/chat/completions answered HTTP 200 with another content type, not text/event-stream` });
    expect(text).not.toContain('sk-upstream-secret');
    expect(text).not.toContain('html');
    expect(JSON.stringify(logs.streams().at(-1))).not.toContain('sk-upstream-secret');
  });

  it('on a resumable route, answered 2xx other than 200, answers a typed 502 without the body', async () => {
    const { status, text } = await call('/created-resumable/v1/chat/completions');
    expect(status).toBe(502);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_NOT_STREAM', message: expect.stringContaining('HTTP 201 with text/event-stream') } });
    expect(text).not.toContain('spelled');
  });
});
