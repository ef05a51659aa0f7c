import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * Upstream bodies framed the way Node's parser accepts but few servers write, or broken, through
 * the gateway: written raw on a real socket, the head and the body in separate reads.
 */

const FIRST_EVENT = 'data: {"choices":[{"delta":{"content":"hello"}}]}\n\n';
const SSE = `${FIRST_EVENT}data: [DONE]\n\n`;
const JSON_ANSWER = '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}';
const ERROR_ANSWER = '{"error":{"message":"bad request","type":"invalid_request_error"}}';

/** One chunk of `body` and the last chunk, each size written with `zeros` leading zeros. */
const zeroPadded = (body: string, zeros: number): string => `${'0'.repeat(zeros)}${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n${'0'.repeat(zeros + 1)}\r\n\r\n`;

/**
 * The answer to a request for `path` (its first segment names the case, `one-read-` written
 * whole, else the body a read after the head): its head and its body.
 */
function answer(path: string, stream: boolean): [head: string, body: string] {
  const kind = path.split('/')[1]?.replace(/^one-read-/, '');
  const status = kind === 'bad-crlf-400' ? '400 Bad Request' : '200 OK';
  const type = stream ? 'text/event-stream' : 'application/json';
  const head = `HTTP/1.1 ${status}\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`;
  if (kind?.startsWith('bad-crlf')) {
    // Chunk data followed by neither CRLF nor LF, before the answer's end: framing Node's parser refuses.
    const text = kind === 'bad-crlf-400' ? ERROR_ANSWER : stream ? FIRST_EVENT : JSON_ANSWER;
    return [head, `${Buffer.byteLength(text).toString(16)}\r\n${text}X0\r\n\r\n`];
  }
  const text = stream ? SSE : JSON_ANSWER;
  return [head, zeroPadded(text, 20)];
}

let upstream: net.Server;
let t: TestGateway;

beforeAll(async () => {
  upstream = net.createServer((socket) => {
    socket.on('error', () => undefined);
    let buffered = Buffer.alloc(0);
    socket.on('data', (data) => {
      buffered = Buffer.concat([buffered, data]);
      // Every complete request on the connection (kept alive), in order.
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buffered.toString('latin1', 0, headEnd);
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        const body = JSON.parse(buffered.toString('utf8', headEnd + 4, headEnd + 4 + length)) as { stream?: boolean };
        buffered = buffered.subarray(headEnd + 4 + length);
        const path = head.split(' ')[1] ?? '/';
        const [first, rest] = answer(path, body.stream === true);
        if (path.startsWith('/one-read-')) socket.write(first + rest);
        else {
          socket.write(first);
          setTimeout(() => socket.destroyed || socket.write(rest), 30);
        }
      }
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // A long idle deadline: an answer that waited for it would fail these specs' timing.
  const timeouts = { firstByteMs: 5_000, idleMs: 10_000, totalMs: 20_000 };
  t = await startTestGateway({
    routes: ['zero-padded', 'bad-crlf', 'bad-crlf-400', 'one-read-bad-crlf', 'one-read-bad-crlf-400'].map((kind) => ({ path: `/${kind}/v1/chat/completions`, provider: 'openai', api: 'chat', url: `${url}/${kind}/v1/chat/completions`, timeouts })),
  });
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function post(kind: string, stream: boolean): Promise<{ status: number; text: string; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${t.gateway.url}/${kind}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }) });
  const text = await res.text();
  return { status: res.status, text, ms: Date.now() - started };
}

describe('upstream body framing', () => {
  it('relays answers whose chunk sizes carry leading zeros, whole and streamed, byte for byte', async () => {
    // Twice each: the second answer comes on the kept-alive upstream connection of the first.
    for (let i = 0; i < 2; i++) {
      expect(await post('zero-padded', false)).toMatchObject({ status: 200, text: JSON_ANSWER });
      expect(await post('zero-padded', true)).toMatchObject({ status: 200, text: SSE });
    }
    expect(t.logs.streams().slice(-4).map((line) => line.outcome)).toEqual(['completed', 'completed', 'completed', 'completed']);
  });

  it.each([
    ['a 200 whole answer', 'bad-crlf'],
    ['a 200 whole answer in one read', 'one-read-bad-crlf'],
  ])('answers %s whose body framing Node refuses with a 502 at once, not at the idle deadline', async (_name, kind) => {
    const res = await post(kind, false);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET', message: expect.stringMatching(/after HTTP 200 \((HPE_\w+|ECONNRESET)\)$/) } });
    expect(res.ms).toBeLessThan(5_000);
  });

  it.each([
    ['an error answer', 'bad-crlf-400'],
    ['an error answer in one read', 'one-read-bad-crlf-400'],
  ])("answers %s whose body framing Node refuses with its status and the provider's error at once", async (_name, kind) => {
    const res = await post(kind, false);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toEqual({ error: { message: 'upstream answered HTTP 400', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } });
    expect(res.ms).toBeLessThan(5_000);
  });

  it('ends a stream whose body framing Node refuses with an error event at once', async () => {
    const res = await post('bad-crlf', true);
    expect(res.status).toBe(200);
    expect(res.text.startsWith(FIRST_EVENT)).toBe(true);
    expect(res.text).toContain('ERR_TIDEGATE_UPSTREAM_RESET');
    expect(res.text).not.toContain('[DONE]');
    expect(res.ms).toBeLessThan(5_000);
  });
});
