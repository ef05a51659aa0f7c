import net from 'node:net';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * Compressed upstream answers that stop early or say nothing, written raw: each is answered as
 * soon as the upstream's connection says so, never at the route's first-byte or idle deadline
 * (10 s here), and an error answer keeps its status and `Retry-After`.
 */

const SSE = `${'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'.repeat(50)}data: [DONE]\n\n`;
const GZIP = zlib.gzipSync(SSE);
const ERROR = zlib.gzipSync(JSON.stringify({ error: { message: 'Rate limit reached, slow down', type: 'rate_limit' } }));

/** What the upstream writes for a case (the path's first segment), then whether it closes. */
function answer(kind: string): { head: string; body: Buffer; close: boolean } {
  const h = (status: string, more: string): string => `HTTP/1.1 ${status}\r\n${more}\r\n`;
  switch (kind) {
    case 'gzip-200-cut':
      return { head: h('200 OK', `Content-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: ${GZIP.length}\r\n`), body: GZIP.subarray(0, GZIP.length >> 1), close: true };
    case 'gzip-429-cut':
      return { head: h('429 Too Many Requests', `Content-Type: application/json\r\nContent-Encoding: gzip\r\nRetry-After: 4\r\nContent-Length: ${ERROR.length}\r\n`), body: ERROR.subarray(0, ERROR.length >> 1), close: true };
    case 'deflate-503-silent':
      return { head: h('503 Service Unavailable', 'Content-Type: application/json\r\nContent-Encoding: deflate\r\nRetry-After: 5\r\nContent-Length: 40\r\n'), body: Buffer.alloc(0), close: false };
    default:
      // A transfer coding Node's parser does not undo, before `chunked`.
      return { head: h('200 OK', 'Content-Type: text/event-stream\r\nTransfer-Encoding: gzip, chunked\r\n'), body: Buffer.from(`${GZIP.length.toString(16)}\r\n${GZIP.toString('latin1')}\r\n0\r\n\r\n`, 'latin1'), close: false };
  }
}

let upstream: net.Server;
let t: TestGateway;
/** The upstream's connections, destroyed at the end: a silent answer holds its own open. */
const sockets = new Set<net.Socket>();
const KINDS = ['gzip-200-cut', 'gzip-429-cut', 'deflate-503-silent', 'te-gzip'];

beforeAll(async () => {
  upstream = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (data: Buffer) => {
      head += data.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(head.slice(0, end))?.[1] ?? 0);
      if (head.length < end + 4 + length) return;
      const kind = head.split(' ')[1]?.split('/')[1] ?? '';
      head = '';
      const { head: status, body, close } = answer(kind);
      socket.write(Buffer.concat([Buffer.from(status, 'latin1'), body]));
      if (close) setTimeout(() => socket.end(), 20);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const timeouts = { firstByteMs: 10_000, idleMs: 10_000, totalMs: 30_000 };
  t = await startTestGateway({
    config: { retry: { maxAttempts: 1 } },
    routes: KINDS.map((kind) => ({ path: `/${kind}/v1/chat/completions`, provider: 'openai', api: 'chat', url: `${url}/${kind}/v1/chat/completions`, timeouts })),
  });
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function post(kind: string, stream: boolean): Promise<{ status: number; text: string; retryAfter: string | null; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${t.gateway.url}/${kind}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream, messages: [] }) });
  const text = await res.text();
  return { status: res.status, text, retryAfter: res.headers.get('retry-after'), ms: Date.now() - started };
}

describe('compressed upstream answers that close early or say nothing', () => {
  it('a gzip 200 whose connection closes before its Content-Length ends at once: 502 whole, an error frame streamed', async () => {
    const whole = await post('gzip-200-cut', false);
    expect(whole).toMatchObject({ status: 502 });
    expect(JSON.parse(whole.text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET' } });
    expect(whole.ms).toBeLessThan(3_000);
    const stream = await post('gzip-200-cut', true);
    expect(stream.status).toBe(200);
    expect(stream.text).toContain('"code":"ERR_TIDEGATE_UPSTREAM_RESET"');
    expect(stream.text).not.toContain('[DONE]');
    expect(stream.ms).toBeLessThan(3_000);
  });

  it.each([true, false])('a gzip 429 whose connection closes mid-body keeps its status and Retry-After, at once (stream: %p)', async (stream) => {
    const res = await post('gzip-429-cut', stream);
    expect(res).toMatchObject({ status: 429, retryAfter: '4' });
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_STATUS' } });
    expect(res.ms).toBeLessThan(3_000);
  });

  it.each([true, false])('a deflate 503 whose body never starts keeps its status and Retry-After, at once (stream: %p)', async (stream) => {
    const res = await post('deflate-503-silent', stream);
    expect(res).toMatchObject({ status: 503, retryAfter: '5' });
    expect(res.ms).toBeLessThan(3_000);
  });

  it('a 200 in Transfer-Encoding gzip, chunked is refused, not read as identity', async () => {
    const res = await post('te-gzip', false);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_ENCODING', message: expect.stringContaining('with Transfer-Encoding gzip, which the gateway does not decode') } });
  });
});
