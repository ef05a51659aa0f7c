import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * An upstream answer compressed with gzip (though the gateway asked for identity) whose gzip
 * stream stops before its end, in a correctly framed HTTP body: never delivered short as if it
 * were whole, on a whole answer, a stream and the passthrough route.
 */

const CHUNK = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'one' } }] })}\n\n`;
const SSE = `${CHUNK.repeat(40)}data: [DONE]\n\n`;
const WHOLE = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(4000) } }] });

let upstream: http.Server;
let t: TestGateway;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    req.on('end', () => {
      const stream = req.method === 'GET' || (JSON.parse(text) as { stream?: boolean }).stream === true;
      const gzip = zlib.gzipSync(stream ? SSE : WHOLE);
      const cut = (req.url ?? '').startsWith('/cut');
      const body = cut ? gzip.subarray(0, gzip.length - 12) : gzip;
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      res.end(body);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  t = await startTestGateway({
    routes: ['cut', 'whole'].flatMap((kind) => [
      { path: `/${kind}/v1/chat/completions`, provider: 'openai', api: 'chat', url: `${url}/${kind}/v1/chat/completions` },
      { path: `/${kind}/sse`, provider: 'passthrough', url: `${url}/${kind}/sse` },
    ]),
  });
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function chat(kind: string, stream: boolean): Promise<{ status: number; text: string }> {
  const res = await fetch(`${t.gateway.url}/${kind}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream, messages: [] }) });
  return { status: res.status, text: await res.text() };
}

describe('a gzip answer cut before the end of its gzip stream', () => {
  it('a whole answer gets a 502, not a 200 with the JSON cut short', async () => {
    const { status, text } = await chat('cut', false);
    expect(status).toBe(502);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET', message: 'upstream body after HTTP 200 could not be decoded (Z_BUF_ERROR)' } });
    expect(await chat('whole', false)).toEqual({ status: 200, text: WHOLE });
  });

  it('a stream ends with an error frame, without [DONE]', async () => {
    const { status, text } = await chat('cut', true);
    expect(status).toBe(200);
    expect(text).toMatch(/data: \{"error":\{[^\n]*"code":"ERR_TIDEGATE_UPSTREAM_[A-Z_]+"/);
    expect(text).not.toContain('[DONE]');
    expect((await chat('whole', true)).text).toBe(SSE);
  });

  it('a passthrough stream ends with an error event, not a clean end', async () => {
    const cut = await (await fetch(`${t.gateway.url}/cut/sse`)).text();
    expect(cut).toContain('event: error\ndata: {"code":"ERR_TIDEGATE_UPSTREAM_RESET","message":"upstream body after HTTP 200 could not be decoded (Z_BUF_ERROR)"}');
    expect(await (await fetch(`${t.gateway.url}/whole/sse`)).text()).toBe(SSE);
  });
});
