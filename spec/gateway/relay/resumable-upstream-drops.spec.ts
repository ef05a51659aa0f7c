import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport } from '../helpers';

/** Per-connection behaviour of the fake upstream: gets the Last-Event-ID sent and the connection index. */
type Behaviour = (res: http.ServerResponse, lastEventId: string, n: number) => void;

let upstream: http.Server | undefined;
let gw: RunningGateway | undefined;
let seen: string[] = [];

async function setup(behaviour: Behaviour, extra: Record<string, unknown> = {}): Promise<string> {
  seen = [];
  let n = 0;
  upstream = http.createServer((req, res) => {
    const id = String(req.headers['last-event-id'] ?? '');
    seen.push(id);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    behaviour(res, id, n++);
  });
  await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/events`;
  const config = parseConfig({
    port: 0,
    upstream: { url: 'http://127.0.0.1:1' },
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    stream: { heartbeatMs: 0 },
    routes: [{ path: '/events', provider: 'passthrough', url, resumable: true, terminator: { data: '[DONE]' } }],
    ...extra,
  });
  gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  return `${gw.url}/events`;
}

afterEach(async () => {
  await gw?.close();
  gw = undefined;
  if (upstream) {
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream!.close(() => r()));
    upstream = undefined;
  }
});

function dataLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice(6));
}

/** Reads the body, waiting `delayMs` after every chunk (a slow reader), bounded by `timeoutMs`. */
async function readSlowly(url: string, delayMs: number, timeoutMs = 10_000): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  }
  return text;
}

/** Upstream that serves events `from..total` by id, dropping the connection after `perConn` events (mid-event when `partial`). */
function numbered(total: number, perConn: number, partial: boolean): Behaviour {
  return (res, lastEventId) => {
    const from = lastEventId === '' ? 1 : Number(lastEventId) + 1;
    let out = 'retry: 5\n';
    const end = Math.min(total, from + perConn - 1);
    for (let i = from; i <= end; i++) out += `id: ${i}\ndata: e${i}\n\n`;
    if (end === total) {
      res.end(`${out}data: [DONE]\n\n`);
      return;
    }
    if (partial) out += `id: ${end + 1}\ndata: e${end + 1}`; // no blank line: never dispatched
    res.write(out);
    setTimeout(() => res.socket?.destroy(), 10);
  };
}

describe('resumable passthrough under repeated upstream drops', () => {
  it('delivers every event exactly once across 10 drops, each mid-event', async () => {
    const url = await setup(numbered(30, 3, true));
    const text = await readSlowly(url, 0);
    expect(dataLines(text)).toEqual([...Array.from({ length: 30 }, (_, i) => `e${i + 1}`), '[DONE]']);
    expect(text).not.toContain('event: error');
    expect(seen.slice(0, 3)).toEqual(['', '3', '6']);
  });

  it('delivers every event exactly once to a slow reader when each connection bursts 400 events then drops', async () => {
    const url = await setup(numbered(2000, 400, true), { stream: { heartbeatMs: 0, prefetch: 4 } });
    const text = await readSlowly(url, 5, 20_000);
    const lines = dataLines(text);
    expect(lines.length).toBe(2001);
    expect(new Set(lines).size).toBe(2001);
    expect(lines.at(-1)).toBe('[DONE]');
  });

  it('gives up with event: error after maxAttempts when every reconnect opens and closes with no event (retry: 0)', async () => {
    const url = await setup((res, _id, n) => {
      if (n === 0) res.write('retry: 0\nid: 1\ndata: first\n\n');
      else res.write('retry: 0\n');
      setTimeout(() => res.end(), 5);
    });
    const text = await readSlowly(url, 0, 5000);
    expect(dataLines(text)[0]).toBe('first');
    expect(text).toContain('event: error');
    expect(seen.length).toBeLessThanOrEqual(1 + 3);
  });

  it('forwards the client Last-Event-ID on the first upstream request and resumes from it', async () => {
    const url = await setup(numbered(2, 5, false));
    const r = await fetch(url, { headers: { 'last-event-id': '1' } });
    const text = await r.text();
    expect(seen[0]).toBe('1');
    expect(dataLines(text)).toEqual(['e2', '[DONE]']);
  });
});
