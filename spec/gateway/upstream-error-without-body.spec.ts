import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * An upstream error answer with no body to relay (none came, only whitespace or control characters, or it broke while it was decoded)
 * reaches the client with the upstream's status and `Retry-After`, and the provider's error
 * shape in place of the body, so an SDK raises an error with a message rather than an empty one.
 */

let upstream: http.Server;
let t: TestGateway;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    const kind = (req.url ?? '').split('/')[1];
    if (kind === 'empty') {
      res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '3', 'content-length': '0' });
      res.end();
    } else if (kind === 'blank') {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(' \r\n\t  \n');
    } else if (kind === 'control') {
      // NULs, a record separator and a byte that is no UTF-8.
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(Buffer.from([0, 0, 0, 0x1e, 0x85]));
    } else {
      // A gzip header, then bytes no inflater takes.
      res.writeHead(400, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03]), Buffer.from('not deflate data at all')]));
    }
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const routes = ['empty', 'blank', 'control', 'corrupt'].flatMap((kind) => [
    { path: `/${kind}/v1/chat/completions`, provider: 'openai', api: 'chat', url: `${url}/${kind}/v1/chat/completions` },
    { path: `/${kind}/v1/messages`, provider: 'anthropic', api: 'messages', url: `${url}/${kind}/v1/messages` },
  ]);
  t = await startTestGateway({ routes });
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function post(path: string, stream: boolean): Promise<{ status: number; json: unknown; retryAfter: string | null }> {
  const res = await fetch(`${t.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 8, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, json: JSON.parse(await res.text()) as unknown, retryAfter: res.headers.get('retry-after') };
}

describe('an upstream error answer without a body to relay', () => {
  it.each([true, false])('an empty 500 reaches an OpenAI client as a 500 in its error shape, Retry-After kept (stream: %p)', async (stream) => {
    expect(await post('/empty/v1/chat/completions', stream)).toEqual({
      status: 500,
      retryAfter: '3',
      json: { error: { message: 'upstream answered HTTP 500', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } },
    });
  });

  it('an empty 500 reaches an Anthropic client in its error shape', async () => {
    const { status, json } = await post('/empty/v1/messages', true);
    expect(status).toBe(500);
    expect(json).toMatchObject({ type: 'error', error: { message: 'upstream answered HTTP 500' } });
  });

  it.each([true, false])('a 400 whose body is only whitespace reaches an OpenAI client in its error shape (stream: %p)', async (stream) => {
    const { status, json } = await post('/blank/v1/chat/completions', stream);
    expect(status).toBe(400);
    expect(json).toEqual({ error: { message: 'upstream answered HTTP 400', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } });
  });

  it.each([true, false])('a 400 whose body is only control characters and undecodable bytes reaches an OpenAI client in its error shape (stream: %p)', async (stream) => {
    const { status, json } = await post('/control/v1/chat/completions', stream);
    expect(status).toBe(400);
    expect(json).toEqual({ error: { message: 'upstream answered HTTP 400', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } });
  });

  it.each([true, false])('a 400 whose gzip body does not decode keeps its status, with the error shape for its body (stream: %p)', async (stream) => {
    const { status, json } = await post('/corrupt/v1/chat/completions', stream);
    expect(status).toBe(400);
    expect(json).toEqual({ error: { message: 'upstream answered HTTP 400', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } });
  });
});
