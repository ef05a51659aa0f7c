import type http from 'node:http';
import zlib from 'node:zlib';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * The gateway asks its upstream for `Accept-Encoding: identity`. An upstream that compresses
 * anyway is decoded where the gateway can (gzip, deflate: one coding, in any case, however
 * the list is spelled, RFC 9110 §8.4.1); a body in any other coding, or in a stack of codings,
 * is refused with a typed 502 before the client got a byte of the head, on every relay: never
 * read as identity. An error answer keeps its status, its body unread.
 */

const CHUNK = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'decoded' } }] })}\n\n`;
const SSE = `${CHUNK}data: [DONE]\n\n`;
const WHOLE = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'decoded' } }] });
/** The start of a zstd frame (its magic number), then bytes no decoder here would take. */
const ZSTD = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.from('not identity at all\n\n')]);

/** Each coding the upstream labels its body with, and that body (what `plain` is once decoded). */
const BODIES: Record<string, (plain: string) => Buffer> = {
  zstd: () => ZSTD,
  // Identity-looking bytes: only the label says what they are, and nobody here reads x-foo.
  'x-foo': (plain) => Buffer.from(plain),
  'gzip, zstd': () => zlib.gzipSync(ZSTD),
  GZIP: (plain) => zlib.gzipSync(plain),
  'identity, gzip': (plain) => zlib.gzipSync(plain),
  ' Br ': (plain) => zlib.brotliCompressSync(plain),
  'Deflate,': (plain) => zlib.deflateSync(plain),
  Identity: (plain) => Buffer.from(plain),
};
/** Each refused coding and how the client's error names it: an unregistered token, upstream text, is not repeated. */
const REFUSED = [
  ['zstd', 'Content-Encoding zstd'],
  ['x-foo', 'an unregistered Content-Encoding'],
  ['gzip, zstd', 'Content-Encoding gzip, zstd'],
  // Decodable, but its decoder's window (up to 16 MiB) would sit outside the stream's budget.
  [' Br ', 'Content-Encoding br'],
] as const;
const DECODED = ['GZIP', 'identity, gzip', 'Deflate,', 'Identity'];
/** The relays a refused coding is checked on. */
const KINDS = ['bytes', 'events', 'whole', 'anthropic', 'passthrough', 'resumable'] as const;
type Kind = (typeof KINDS)[number];

describe('the content coding of an upstream answer', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  /** Upstream requests per coding and kind, `coding kind`. */
  const asked = new Map<string, number>();

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      const [, coding = '', kind = ''] = (req.url ?? '').split('/').map(decodeURIComponent);
      asked.set(`${coding} ${kind}`, (asked.get(`${coding} ${kind}`) ?? 0) + 1);
      req.resume();
      req.on('end', () => {
        const encode = BODIES[coding] ?? ((plain: string) => Buffer.from(plain));
        if (kind === 'reconnect' && asked.get(`${coding} ${kind}`) === 1) {
          // The first connection drops after an event, unencoded; the reconnect answers in the coding.
          res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: 1\n${CHUNK}`);
          return;
        }
        if (kind === 'failing') {
          res.writeHead(503, { 'content-type': 'application/json', 'content-encoding': coding, 'retry-after': '7' });
          res.end(encode('{"error":{"message":"overloaded","type":"server_error"}}'));
          return;
        }
        const whole = kind === 'whole';
        res.writeHead(200, { 'content-type': whole ? 'application/json' : 'text/event-stream', 'content-encoding': coding });
        res.end(encode(whole ? WHOLE : SSE));
      });
    });
    const routes: Record<string, unknown>[] = [];
    const route = (coding: string, kind: string, index: number): Record<string, unknown> => {
      const url = `http://127.0.0.1:${upstream.port}/${encodeURIComponent(coding)}/${kind}`;
      const base = { path: `/c${index}/${kind}`, url, apiKey: 'sk-test', retry: { maxAttempts: kind === 'failing' ? 1 : 2, baseDelayMs: 1 } };
      switch (kind) {
        case 'anthropic':
          return { ...base, path: `${base.path}/v1/messages`, url: `${url}/v1/messages`, provider: 'anthropic' };
        case 'passthrough':
          return { ...base, provider: 'passthrough', terminator: { data: '[DONE]' } };
        case 'reconnect':
          return { ...base, provider: 'passthrough', resumable: true, terminator: { data: '[DONE]' }, retry: { maxReconnects: 2, baseDelayMs: 1 } };
        case 'resumable':
          return { ...base, provider: 'passthrough', resumable: true, terminator: { data: '[DONE]' } };
        default:
          return { ...base, path: `${base.path}/v1/chat/completions`, url: `${url}/v1/chat/completions`, provider: 'openai', ...(kind === 'events' ? { policy: { relay: 'events' } } : {}) };
      }
    };
    Object.keys(BODIES).forEach((coding, i) => {
      for (const kind of [...KINDS, 'failing']) routes.push(route(coding, kind, i));
    });
    routes.push(route('zstd', 'reconnect', Object.keys(BODIES).indexOf('zstd')));
    gateway = await startGateway(parseConfig({ port: 0, routes }), { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  async function call(coding: string, kind: Kind | 'failing' | 'reconnect'): Promise<{ status: number; text: string; headers: Headers }> {
    const index = Object.keys(BODIES).indexOf(coding);
    const signal = AbortSignal.timeout(10_000);
    let res: Response;
    if (kind === 'passthrough' || kind === 'resumable' || kind === 'reconnect') res = await fetch(`${gateway.url}/c${index}/${kind}`, { signal });
    else {
      const anthropic = kind === 'anthropic';
      const path = `/c${index}/${kind}${anthropic ? '/v1/messages' : '/v1/chat/completions'}`;
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(anthropic ? { 'anthropic-version': '2023-06-01' } : {}) };
      const body = { model: 'm', max_tokens: 8, stream: kind !== 'whole', messages: [{ role: 'user', content: 'hi' }] };
      res = await fetch(`${gateway.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal });
    }
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  describe.each(REFUSED)('%s', (coding, named) => {
    it.each(KINDS)('is refused with a typed 502 naming the coding, the upstream asked once (%s)', async (kind) => {
      const { status, text } = await call(coding, kind);
      expect(status).toBe(502);
      const json = JSON.parse(text) as { error: { code: string; message: string } };
      expect(json.error.code).toBe('ERR_TIDEGATE_UPSTREAM_ENCODING');
      expect(json.error.message).toContain(`HTTP 200 with ${named}, which the gateway does not decode`);
      if (coding === 'x-foo') expect(text).not.toContain('x-foo');
      if (kind === 'anthropic') expect(json).toMatchObject({ type: 'error', error: { type: 'api_error' } });
      expect(text).not.toContain('not identity');
      expect(text).not.toContain('decoded');
      expect(asked.get(`${coding} ${kind}`)).toBe(1);
      expect(logs.streams().at(-1)).toMatchObject({ status: 502, errorCode: 'ERR_TIDEGATE_UPSTREAM_ENCODING' });
    });
  });

  it.each(REFUSED)("on an error answer in %s, relays the status and Retry-After with the provider's error for its unread body", async (coding) => {
    const { status, text, headers } = await call(coding, 'failing');
    expect(status).toBe(503);
    expect(headers.get('retry-after')).toBe('7');
    expect(JSON.parse(text)).toEqual({ error: { message: 'upstream answered HTTP 503', type: 'tidegate_error', code: 'ERR_TIDEGATE_UPSTREAM_STATUS', param: null } });
    expect(logs.streams().at(-1)).toMatchObject({ status: 503, upstreamStatus: 503 });
  });

  it('ends a resumable stream whose reconnect answers in zstd with an error event at once, not after its reconnects', async () => {
    const { status, text } = await call('zstd', 'reconnect');
    expect(status).toBe(200);
    expect(text.startsWith(`id: 1\n${CHUNK}`)).toBe(true);
    expect(text).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_UPSTREAM_ENCODING","message":"[^"]*HTTP 200 with Content-Encoding zstd, /);
    expect(asked.get('zstd reconnect')).toBe(2);
  });

  it('decodes gzip and deflate whatever the case and however the list is spelled', async () => {
    for (const coding of DECODED) {
      expect(await call(coding, 'bytes')).toMatchObject({ status: 200, text: SSE });
      expect(await call(coding, 'whole')).toMatchObject({ status: 200, text: WHOLE });
      const passthrough = await call(coding, 'resumable');
      expect(passthrough.status).toBe(200);
      expect(passthrough.text).toContain('"content":"decoded"');
    }
  });
});
