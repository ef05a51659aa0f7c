import type http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * A 3xx that is not a redirect to follow (300 Multiple Choices, 304 Not Modified, 305 Use Proxy,
 * a 307 without `Location`) is no answer to a model request: the client gets the route's typed
 * 502, never the upstream's status, `Location` or body, and it is not retried.
 */
describe('an upstream 3xx that is not a redirect to follow', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  const calls = new Map<string, number>();

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      const status = Number((req.url ?? '').split('/')[1]);
      calls.set(String(status), (calls.get(String(status)) ?? 0) + 1);
      if (status === 307) {
        res.writeHead(307, { 'content-type': 'application/json' }).end('{"choices":"upstream-body"}');
        return;
      }
      res.writeHead(status, { location: 'http://elsewhere.invalid/v1/chat/completions', 'content-type': 'application/json' });
      res.end('{"choices":"upstream-body"}');
    });
    const base = `http://127.0.0.1:${upstream.port}`;
    const routes: Record<string, unknown>[] = [];
    for (const status of [300, 304, 305]) {
      const route = { provider: 'openai', url: `${base}/${status}/v1/chat/completions`, apiKey: 'sk-test' };
      routes.push(
        { ...route, path: `/${status}/bytes/v1/chat/completions` },
        { ...route, path: `/${status}/events/v1/chat/completions`, policy: { relay: 'events' } },
        { ...route, path: `/${status}/nonstream/v1/chat/completions`, stream: false },
        { ...route, path: `/${status}/resume/v1/chat/completions`, resume: true },
        { ...route, path: `/${status}/follow/v1/chat/completions`, followRedirects: true },
        { ...route, path: `/${status}/follow-resume/v1/chat/completions`, followRedirects: true, resume: true },
        { ...route, provider: 'anthropic', url: `${base}/${status}/v1/messages`, path: `/${status}/anthropic/v1/messages` },
        { provider: 'passthrough', url: `${base}/${status}/events`, path: `/${status}/resumable/v1/chat/completions`, resumable: true },
        { provider: 'passthrough', url: `${base}/${status}/events`, path: `/${status}/follow-resumable/v1/chat/completions`, resumable: true, followRedirects: true },
      );
    }
    const noLocation = { provider: 'openai', url: `${base}/307/v1/chat/completions`, apiKey: 'sk-test', followRedirects: true };
    routes.push(
      { ...noLocation, path: '/307/follow/v1/chat/completions' },
      { ...noLocation, path: '/307/follow-resume/v1/chat/completions', resume: true },
      { provider: 'passthrough', url: `${base}/307/events`, path: '/307/follow-resumable/v1/chat/completions', resumable: true, followRedirects: true },
    );
    const config = parseConfig({ port: 0, retry: { baseDelayMs: 1, maxAttempts: 3 }, routes });
    gateway = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  async function call(path: string, stream: boolean): Promise<{ status: number; text: string; location: string | null }> {
    const anthropic = path.includes('/anthropic/');
    if (path.includes('resumable/')) {
      const res = await fetch(`${gateway.url}${path}`, { signal: AbortSignal.timeout(10_000) });
      return { status: res.status, text: await res.text(), location: res.headers.get('location') };
    }
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(anthropic ? { 'anthropic-version': '2023-06-01' } : {}) },
      body: JSON.stringify({ model: 'm', stream, ...(anthropic ? { max_tokens: 8 } : {}), messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text(), location: res.headers.get('location') };
  }

  it.each([
    [300, 'bytes', true],
    [300, 'events', true],
    [300, 'nonstream', false],
    [300, 'resume', true],
    [300, 'follow', true],
    [300, 'follow-resume', true],
    [300, 'resumable', true],
    [300, 'follow-resumable', true],
    [304, 'bytes', true],
    [304, 'events', true],
    [304, 'nonstream', false],
    [304, 'resume', true],
    [304, 'follow', true],
    [304, 'resumable', true],
    [304, 'follow-resumable', true],
    [305, 'bytes', true],
    [305, 'nonstream', false],
    [305, 'resume', true],
    [305, 'follow', true],
    [305, 'resumable', true],
    [307, 'follow', true],
    [307, 'follow-resume', true],
    [307, 'follow-resumable', true],
  ])('HTTP %s answers a typed 502 without its Location or body, not retried (%s, stream: %s)', async (upstreamStatus, kind, stream) => {
    const before = calls.get(String(upstreamStatus)) ?? 0;
    const { status, text, location } = await call(`/${upstreamStatus}/${kind}/v1/chat/completions`, stream);
    expect(status).toBe(502);
    expect(location).toBeNull();
    const error = (JSON.parse(text) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('ERR_TIDEGATE_UPSTREAM_REDIRECT');
    expect(error.message).toContain(`HTTP ${upstreamStatus}`);
    expect(text).not.toContain('elsewhere.invalid');
    expect(text).not.toContain('upstream-body');
    expect(calls.get(String(upstreamStatus))).toBe(before + 1);
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_redirect', errorCode: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', status: 502 });
  });

  it("answers an Anthropic route in Anthropic's error shape", async () => {
    const { status, text } = await call('/300/anthropic/v1/messages', true);
    expect(status).toBe(502);
    expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { code: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', message: expect.stringContaining('HTTP 300') } });
    expect(text).not.toContain('upstream-body');
  });
});
