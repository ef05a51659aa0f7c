import { existsSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../gateway/helpers';

// A page served from another origin streams through the gateway with fetch(): the preflight
// (authorization, the SDKs' x-stainless-* headers) is answered and the stream carries
// Access-Control-Allow-Origin. An origin not listed is refused by the browser.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
// Skipped with a warning without Chromium on a developer machine; CI (CI=true) installs it.
const missingBrowser = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (missingBrowser) process.stderr.write(`CORS browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)\n`);
const skip = process.env.TIDEGATE_SKIP_BROWSER === '1' || missingBrowser;

let t: TestGateway;
let page: http.Server;
let pageOrigin: string;
let browser: Browser;

beforeAll(async () => {
  if (skip) return;
  page = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>app</title><p>app</p>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  t = await startTestGateway({ sim: { tokensPerSecond: 500, ttftMs: 5 }, config: { cors: { origins: [pageOrigin] } } });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}, 60_000);
afterAll(async () => {
  if (skip) return;
  await browser?.close();
  await t.close();
  await new Promise<void>((resolve) => page.close(() => resolve()));
});

/** Streams a chat completion from `origin`'s page with fetch() and reads the text and the headers it may see. */
async function streamFrom(origin: string): Promise<{ text?: string; streamId?: string | null; error?: string }> {
  const context = await browser.newContext();
  try {
    const tab = await context.newPage();
    await tab.goto(`${origin}/`);
    return await tab.evaluate(async (gateway: string) => {
      try {
        const res = await fetch(`${gateway}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer browser-key', 'x-stainless-os': 'Unknown', 'x-stainless-lang': 'js' },
          body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        });
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let raw = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          raw += decoder.decode(value, { stream: true });
        }
        let text = '';
        for (const line of raw.split('\n')) {
          if (!line.startsWith('data: {')) continue;
          text += (JSON.parse(line.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta?.content ?? '';
        }
        return { text, streamId: res.headers.get('x-tidegate-stream-id') };
      } catch (err) {
        return { error: String(err) };
      }
    }, t.gateway.url);
  } finally {
    await context.close();
  }
}

(skip ? describe.skip : describe)('CORS from a Chromium page on another origin', () => {
  it('streams a chat completion through the preflight, reading the stream id header', async () => {
    const got = await streamFrom(pageOrigin);
    expect(got.error).toBeUndefined();
    expect(got.text).toBe("I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.");
    expect(got.streamId).toMatch(/^[0-9a-f-]{32,36}$/);
  });

  it('is refused by the browser for an origin not listed', async () => {
    const other = pageOrigin.replace('127.0.0.1', 'localhost');
    const got = await streamFrom(other);
    expect(got.error).toMatch(/TypeError/);
  });
});

describe('CORS headers', () => {
  it('answers a preflight with the allowed origin, methods, asked headers and max age', async () => {
    const g = await startTestGateway({ config: { cors: { origins: ['https://app.example'], maxAgeMs: 60_000 } } });
    try {
      const res = await fetch(`${g.gateway.url}/v1/responses`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-api-key,anthropic-version,anthropic-dangerous-direct-browser-access,x-stainless-retry-count,last-event-id,x-evil',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST');
      expect(res.headers.get('access-control-allow-headers')).toBe('content-type,x-api-key,anthropic-version,anthropic-dangerous-direct-browser-access,x-stainless-retry-count,last-event-id');
      expect(res.headers.get('access-control-max-age')).toBe('60');
    } finally {
      await g.close();
    }
  });

  it('is off by default: no Access-Control-* header and no preflight answer', async () => {
    const g = await startTestGateway();
    try {
      const res = await fetch(`${g.gateway.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
      // Not a preflight answer: the route's 405 for a method it does not serve.
      expect(res.status).toBe(405);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await g.close();
    }
  });
});
