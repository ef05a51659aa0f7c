import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * Nothing about the upstream reaches a client: its URL (host, port, userinfo, query) never
 * appears in an error, and the configured key never in anything relayed, whatever the upstream
 * echoes back. Every client-visible output is grepped for every canary.
 */

const KEY = `sk-canary-${randomBytes(12).toString('hex')}`;
const USER = 'user-canary';
const PASS = 'pass-canary';
const TOKEN = 'tok-canary-123';

const chunk = (content: string): string => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

/** An upstream that echoes the credential it received, in the way `x-mode` asks. */
function echoing(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.resume();
  const auth = String(req.headers.authorization ?? '');
  const key = auth.replace(/^Bearer /, '');
  switch (req.headers['x-mode']) {
    case 'status-401':
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${key} (${auth})`, type: 'invalid_request_error', code: 'invalid_api_key' } }));
      return;
    case 'stream-error':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('hello'));
      res.end(`data: ${JSON.stringify({ error: { message: `key ${key} was revoked`, type: 'invalid_request_error', code: null } })}\n\n`);
      return;
    case 'stream-echo': {
      // The key split across two writes (and two reads of the gateway): it must still be caught.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const text = chunk(`your key is ${key}, again ${key}`);
      const cut = text.indexOf(key) + 7;
      res.write(chunk('hello'));
      res.write(text.slice(0, cut));
      setTimeout(() => {
        res.write(text.slice(cut));
        res.end('data: [DONE]\n\n');
      }, 30);
      return;
    }
    case 'non-stream':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: `you sent ${key}` } }] }));
      return;
    default:
      res.writeHead(404).end();
  }
}

describe('upstream details never reach a client', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let downPort: number;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  let canaries: string[];

  beforeAll(async () => {
    upstream = await listen(echoing);
    // A port that refuses connections: bound, then closed.
    const down = await listen(() => undefined);
    downPort = down.port;
    await down.close();
    const withSecrets = (port: number): string => `http://${USER}:${PASS}@127.0.0.1:${port}/v1/chat/completions?token=${TOKEN}`;
    const route = { provider: 'openai', url: withSecrets(upstream.port), apiKey: KEY, forwardHeaders: ['content-type', 'x-mode'] };
    canaries = [KEY, USER, PASS, TOKEN, `127.0.0.1:${upstream.port}`, `127.0.0.1:${downPort}`];
    const config = parseConfig({
      port: 0,
      retry: { baseDelayMs: 1, maxAttempts: 2 },
      routes: [
        { ...route, path: '/bytes/v1/chat/completions' },
        { ...route, path: '/events/v1/chat/completions', policy: { relay: 'events' } },
        { ...route, path: '/nonstream/v1/chat/completions', stream: false },
        { ...route, path: '/down/v1/chat/completions', url: withSecrets(downPort) },
      ],
    });
    gateway = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  async function call(path: string, mode: string, stream = true): Promise<{ status: number; text: string }> {
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mode': mode },
      body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    for (const canary of canaries) expect(text).not.toContain(canary);
    return { status: res.status, text };
  }

  it.each([true, false])('an unreachable upstream (stream: %s) is named by its route, never its URL', async (stream) => {
    const { status, text } = await call('/down/v1/chat/completions', 'none', stream);
    expect(status).toBe(502);
    const error = (JSON.parse(text) as { error: { message: string; code: string } }).error;
    expect(error.code).toBe('ERR_TIDEGATE_UPSTREAM_UNREACHABLE');
    expect(error.message).toBe('upstream for route /down/v1/chat/completions unreachable (ECONNREFUSED)');
  });

  it.each(['/bytes', '/events', '/nonstream'])('an HTTP error body echoing the key is relayed with the key redacted (%s)', async (prefix) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`, 'status-401', prefix !== '/nonstream');
    expect(status).toBe(401);
    const error = (JSON.parse(text) as { error: { message: string; code: string } }).error;
    expect(error.code).toBe('invalid_api_key');
    expect(error.message).toBe('Incorrect API key provided: [redacted] ([redacted])');
  });

  it.each(['/bytes', '/events'])('a mid-stream error frame echoing the key is relayed redacted (%s)', async (prefix) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`, 'stream-error');
    expect(status).toBe(200);
    expect(text).toContain('"content":"hello"');
    expect(text).toContain('key [redacted] was revoked');
  });

  it.each(['/bytes', '/events'])('stream content echoing the key, split across reads, is redacted (%s)', async (prefix) => {
    const { status, text } = await call(`${prefix}/v1/chat/completions`, 'stream-echo');
    expect(status).toBe(200);
    expect(text).toContain('your key is [redacted], again [redacted]');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('a non-stream answer echoing the key is redacted', async () => {
    const { status, text } = await call('/nonstream/v1/chat/completions', 'non-stream', false);
    expect(status).toBe(200);
    expect((JSON.parse(text) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('you sent [redacted]');
  });

  it('logs keep the failure and a redacted URL, but no credential', () => {
    const lines = logs.streams();
    expect(lines.length).toBeGreaterThan(0);
    const text = JSON.stringify(lines);
    for (const secret of [KEY, PASS, TOKEN]) expect(text).not.toContain(secret);
    const down = lines.find((l) => l.route === '/down/v1/chat/completions');
    expect(down?.upstream).toBe(`http://redacted:redacted@127.0.0.1:${downPort}/v1/chat/completions?token=[redacted]`);
    expect(String(down?.errorDetail)).toContain('ECONNREFUSED');
  });
});
