import type http from 'node:http';
import { listen, waitFor } from '../harness/net';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * Upstreams that answer and then misbehave, on real sockets: a whole body that stalls, a head
 * Node's parser refuses, an error body that stalls. Each upstream request is counted.
 */

/** How the upstream answers, by the first segment of the path. */
const MODES: Record<string, (res: http.ServerResponse) => void> = {
  // 200 JSON, part of the body, then silence.
  'json-stall': (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"id":"x","choices":[');
  },
  // 200 with one header past Node's 16 KiB maxHeaderSize.
  'huge-headers': (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-big': 'h'.repeat(60_000) });
    res.end('{"object":"list","data":[]}');
  },
  // 101 Switching Protocols, then the connection held open.
  switching: (res) => {
    res.socket?.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  },
  // 101 with no `Upgrade` header: Node's parser takes it for a final answer, not an upgrade.
  'switching-bare': (res) => {
    res.socket?.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n');
  },
  // 500 JSON, part of the body, then silence.
  'error-stall': (res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.write('{"error":{"message":"');
  },
};

let t: TestGateway;
let upstream: Awaited<ReturnType<typeof listen>>;
const requests: Record<string, number> = {};
/** Upstream responses whose socket closed. */
let closed = 0;

const TIMEOUTS = { firstByteMs: 600, idleMs: 300, totalMs: 20_000 };

beforeAll(async () => {
  upstream = await listen((req, res) => {
    const mode = (req.url ?? '/').split('/')[1] as string;
    requests[mode] = (requests[mode] ?? 0) + 1;
    req.resume();
    res.socket?.once('close', () => closed++);
    MODES[mode]?.(res);
  });
  const route = (path: string, provider: string, api: string, mode: string): Record<string, unknown> => ({
    path: `/${mode}${path}`,
    provider,
    api,
    url: `${upstream.url}/${mode}${path}`,
    timeouts: TIMEOUTS,
  });
  t = await startTestGateway({
    routes: Object.keys(MODES).flatMap((mode) => [
      route('/v1/chat/completions', 'openai', 'chat', mode),
      route('/v1/messages', 'anthropic', 'messages', mode),
      route('/v1/models', 'openai', 'models', mode),
      route('/v1/embeddings', 'openai', 'embeddings', mode),
    ]),
  });
});
afterAll(async () => {
  await t.close();
  await upstream.close();
});

async function post(path: string, body: Record<string, unknown>): Promise<{ status: number; text: string; json: () => Record<string, unknown>; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${t.gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown>, ms: Date.now() - started };
}

async function get(path: string): Promise<{ status: number; text: string; json: () => Record<string, unknown>; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${t.gateway.url}${path}`);
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown>, ms: Date.now() - started };
}

const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const messages = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };

describe('upstream answers that stall or cannot be parsed', () => {
  it('a whole 200 body that stalls is cut by idleMs with a 504 idle timeout, in the route shape', async () => {
    const before = closed;
    const openai = await post('/json-stall/v1/chat/completions', chat);
    expect(openai.status).toBe(504);
    expect(openai.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_TIMEOUT', message: 'idle timeout after 300 ms' } });
    expect(openai.ms).toBeLessThan(3000);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'timeout', timeoutKind: 'idle' });

    const anthropic = await post('/json-stall/v1/messages', messages);
    expect(anthropic.status).toBe(504);
    expect(anthropic.json()).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });

    const models = await get('/json-stall/v1/models');
    expect(models.status).toBe(504);
    expect(models.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_TIMEOUT' } });
    expect(models.ms).toBeLessThan(3000);

    const embeddings = await post('/json-stall/v1/embeddings', { model: 'e', input: 'hi' });
    expect(embeddings.status).toBe(504);
    // Each stalled upstream request was aborted.
    await waitFor(() => closed >= before + 4);
  });

  it('a 2xx whose head Node cannot parse is answered 502 once, never retried', async () => {
    const before = requests['huge-headers'] ?? 0;
    const res = await post('/huge-headers/v1/chat/completions', chat);
    expect(res.status).toBe(502);
    expect(res.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET', message: expect.stringMatching(/could not be parsed \(HPE_HEADER_OVERFLOW\)/) } });
    expect(requests['huge-headers']).toBe(before + 1);
    expect(t.logs.streams().at(-1)).toMatchObject({ attempts: 1, errorCode: 'ERR_TIDEGATE_UPSTREAM_RESET' });

    const stream = await post('/huge-headers/v1/chat/completions', { ...chat, stream: true });
    expect(stream.status).toBe(502);
    expect(requests['huge-headers']).toBe(before + 2);
  });

  it.each(['switching', 'switching-bare'])('a 101 Switching Protocols (%s) is answered 502, not relayed or a first-byte 504, never retried, its connection closed', async (mode) => {
    const before = requests[mode] ?? 0;
    const closedBefore = closed;
    for (const [i, stream] of [false, true].entries()) {
      const res = await post(`/${mode}/v1/chat/completions`, { ...chat, stream });
      expect(res.status).toBe(502);
      expect(res.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_RESET', message: `upstream for route /${mode}/v1/chat/completions switched protocols (HTTP 101) instead of answering` } });
      expect(requests[mode]).toBe(before + i + 1);
    }
    const anthropic = await post(`/${mode}/v1/messages`, { ...messages, stream: true });
    expect(anthropic.status).toBe(502);
    expect(anthropic.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    const models = await get(`/${mode}/v1/models`);
    expect(models.status).toBe(502);
    await waitFor(() => closed >= closedBefore + 4);
  });

  it('an error body that stalls is relayed with the upstream status and what arrived', async () => {
    const before = closed;
    for (const stream of [true, false]) {
      const res = await post('/error-stall/v1/chat/completions', { ...chat, stream });
      expect(res.status).toBe(500);
      expect(res.text).toBe('{"error":{"message":"');
      expect(res.ms).toBeLessThan(3000);
    }
    const anthropic = await post('/error-stall/v1/messages', { ...messages, stream: true });
    expect(anthropic.status).toBe(500);
    await waitFor(() => closed >= before + 3);
  });
});
