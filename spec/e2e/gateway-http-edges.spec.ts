import Anthropic from '@anthropic-ai/sdk';
import net from 'node:net';
import { parsePrometheus, startTestGateway, type TestGateway } from '../gateway/helpers';

let t: TestGateway;
let anthropic: Anthropic;

beforeAll(async () => {
  t = await startTestGateway({ sim: { tokensPerSecond: 2000, ttftMs: 5 }, config: { stream: { heartbeatMs: 0 } } });
  anthropic = new Anthropic({ baseURL: t.gateway.url, apiKey: 'k', maxRetries: 0 });
});
afterAll(async () => {
  await t.close();
});

async function scrape(): Promise<Map<string, number>> {
  return parsePrometheus(await (await fetch(`${t.gateway.url}/metrics`)).text());
}

async function waitFor(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('waitFor: timed out');
}

const BODY = JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] });

/** Raw HTTP/1.1 exchange on one socket: writes `chunks` in order (with optional waits), collects everything until `until` matches or timeout. */
async function raw(port: number, steps: (string | number)[], until: (text: string) => boolean, timeoutMs = 5000): Promise<string> {
  const sock = net.connect(port, '127.0.0.1');
  let text = '';
  sock.on('data', (c: Buffer) => (text += c.toString('utf8')));
  try {
    await new Promise<void>((r, j) => {
      sock.once('connect', r);
      sock.once('error', j);
    });
    for (const s of steps) {
      if (typeof s === 'number') await new Promise((r) => setTimeout(r, s));
      else sock.write(s);
    }
    const end = Date.now() + timeoutMs;
    while (!until(text) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    return text;
  } finally {
    sock.destroy();
  }
}

function post(path: string, body: string, extra = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

describe('gateway over raw HTTP/1.1 sockets', () => {
  it('answers two pipelined streaming requests on one socket, in order, both complete', async () => {
    const text = await raw(t.gateway.port, [post('/v1/chat/completions', BODY) + post('/v1/chat/completions', BODY)], (s) => s.split('data: [DONE]').length === 3);
    expect(text.split('HTTP/1.1 200').length).toBe(3);
    expect(text.split('data: [DONE]').length).toBe(3);
  });

  it('streams a request sent with Expect: 100-continue', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nExpect: 100-continue\r\n\r\n`;
    const text = await raw(t.gateway.port, [head, 100, BODY], (s) => s.includes('data: [DONE]'));
    expect(text).toContain('HTTP/1.1 100 Continue');
    expect(text).toContain('data: [DONE]');
  });

  it('keeps tidegate_active_streams at 0 (never negative) after clients leave before the upstream answered', async () => {
    for (let i = 0; i < 5; i++) {
      const ac = new AbortController();
      const p = fetch(`${t.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json', 'x-sim-ttft-ms': '300' },
        signal: ac.signal,
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 30));
      ac.abort();
      await p;
    }
    await waitFor(() => t.gateway.app.gateway.activeStreams === 0, 3000);
    const m = await scrape();
    for (const [k, v] of m) if (k.startsWith('tidegate_active_streams')) expect(v).toBe(0);
  });

  it('does not grow metric label cardinality from client-controlled paths, methods or query strings', async () => {
    const before = [...(await scrape()).keys()].filter((k) => k.startsWith('tidegate_') && !k.includes('_bucket')).length;
    for (let i = 0; i < 30; i++) {
      await fetch(`${t.gateway.url}/v1/chat/completions/x${i}?q=${i}`, { method: 'POST', body: BODY }).then((r) => r.text());
      await fetch(`${t.gateway.url}/random-${i}`).then((r) => r.text());
      await fetch(`${t.gateway.url}/V1/CHAT/COMPLETIONS?x=${i}`, { method: 'POST', body: '{bad' }).then((r) => r.text());
    }
    const keys = [...(await scrape()).keys()].filter((k) => k.startsWith('tidegate_') && !k.includes('_bucket'));
    expect(keys.some((k) => /random-|x\d+|q=/.test(k))).toBe(false);
    expect(keys.length).toBeLessThanOrEqual(before + 12); // only fixed outcome labels may appear
  });
});

describe('Anthropic route with the official SDK', () => {
  it('delivers the whole text to a slow SDK reader under pause backpressure', async () => {
    const stream = await anthropic.messages.create({ model: 'sim-zh', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let stop = false;
    for await (const ev of stream) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') {
        text += ev.delta.text;
        await new Promise((r) => setTimeout(r, 2));
      }
      if (ev.type === 'message_stop') stop = true;
    }
    expect(stop).toBe(true);
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toContain('\uFFFD');
  });

  it('aborts the upstream when the SDK stream is aborted mid-stream, and records client_closed', async () => {
    const upstreamClosed = new Promise<void>((resolve) => t.sim.server.once('request', (_req, res) => res.once('close', () => resolve())));
    const stream = await anthropic.messages.create(
      { model: 'sim', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-tokens-per-second': '20' } },
    );
    let n = 0;
    for await (const ev of stream) {
      if (ev.type === 'content_block_delta' && ++n === 2) {
        stream.controller.abort();
        break;
      }
    }
    await upstreamClosed;
    await waitFor(() => t.gateway.app.gateway.activeStreams === 0, 3000);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/messages', outcome: 'client_closed' });
  });

  it('answers hostile Anthropic bodies with a JSON 4xx in Anthropic shape, never a crash', async () => {
    const bodies = ['[]', 'null', '1e999', '"x"', '{"__proto__":{"stream":true}}', '{"stream":"true","messages":{}}', '{'.repeat(5000)];
    for (const b of bodies) {
      const r = await fetch(`${t.gateway.url}/v1/messages`, { method: 'POST', body: b, headers: { 'content-type': 'application/json', 'x-sim-ttft-ms': '1' } });
      const text = await r.text();
      expect(r.status).toBeGreaterThanOrEqual(200);
      expect(r.status).toBeLessThan(600);
      if (r.status >= 400) expect(() => JSON.parse(text) as unknown).not.toThrow();
    }
    expect((await fetch(`${t.gateway.url}/healthz`)).status).toBe(200);
  });
});
