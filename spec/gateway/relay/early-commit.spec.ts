import http from 'node:http';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport } from '../helpers';

/** An upstream that answers each request after `delayMs` with `answer`; timers cleared on close. */
async function slowUpstream(delayMs: number, answer: (res: http.ServerResponse) => void): Promise<Awaited<ReturnType<typeof listen>>> {
  const timers = new Set<NodeJS.Timeout>();
  const server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    const t = setTimeout(() => {
      timers.delete(t);
      answer(res);
    }, delayMs);
    timers.add(t);
  });
  return {
    ...server,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      await server.close();
    },
  };
}

async function gatewayFor(upstreamUrl: string, route: Record<string, unknown>): Promise<{ gw: RunningGateway; logs: CaptureTransport }> {
  const logs = new CaptureTransport();
  const config = parseConfig({ port: 0, upstream: { url: upstreamUrl }, retry: { maxAttempts: 1 }, routes: [route] });
  return { gw: await startGateway(config, { logger: createLogger({ transports: [logs] }) }), logs };
}

/** The response's status and headers time, and its body with the time each chunk arrived, ms after the request. */
async function timedRequest(url: string, init: RequestInit = {}): Promise<{ status: number; headersMs: number; contentType: string | null; chunks: { ms: number; text: string }[]; text: string }> {
  const t0 = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const headersMs = performance.now() - t0;
  const chunks: { ms: number; text: string }[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push({ ms: performance.now() - t0, text: decoder.decode(chunk, { stream: true }) });
  return { status: res.status, headersMs, contentType: res.headers.get('content-type'), chunks, text: chunks.map((c) => c.text).join('') };
}

const chat = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [] }) };

describe('early commit (policy.earlyCommitMs)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('commits 200 and sends heartbeats while the upstream delays its status line, then relays the stream', async () => {
    const upstream = await slowUpstream(1000, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: hi\n\ndata: [DONE]\n\n');
    });
    closers.push(upstream.close);
    const { gw, logs } = await gatewayFor(upstream.url, { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, terminator: { data: '[DONE]' }, policy: { earlyCommitMs: 100, heartbeatMs: 200 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/events`);
    expect(r.status).toBe(200);
    expect(r.contentType).toMatch(/^text\/event-stream/);
    expect(r.headersMs).toBeLessThan(700);
    const pingsBeforeData = r.chunks.filter((c) => c.ms < 950 && c.text.includes(': ping')).length;
    expect(pingsBeforeData).toBeGreaterThanOrEqual(3);
    expect(r.text.replace(/: ping\n\n/g, '')).toBe('data: hi\n\ndata: [DONE]\n\n');
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'completed' });
  });

  it('turns an upstream error after an early commit into the provider error event (passthrough)', async () => {
    const upstream = await slowUpstream(600, (res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"overloaded"}');
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, policy: { earlyCommitMs: 100, heartbeatMs: 150 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/events`);
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^: ping\n\n/);
    expect(r.text).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_UPSTREAM_STATUS","message":"upstream answered HTTP 503"\}\n\n$/);
  });

  it("turns an upstream error after an early commit into an OpenAI error chunk carrying the upstream's error", async () => {
    const upstream = await slowUpstream(400, (res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"slow down","type":"rate_limit","code":"rate_limit_exceeded"}}');
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/v1/chat/completions', provider: 'openai', policy: { earlyCommitMs: 100 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/v1/chat/completions`, chat);
    expect(r.status).toBe(200);
    const frames = r.text.split('\n\n').filter((f) => f.startsWith('data: '));
    expect(frames).toHaveLength(1);
    const body = JSON.parse(frames[0].slice(6)) as { error: { message: string; code: string } };
    expect(body.error).toEqual({ message: 'slow down', type: 'rate_limit', code: 'rate_limit_exceeded', param: null });
    expect(r.text.startsWith(': ping\n\n')).toBe(true);
  });

  it("turns an upstream error after an early commit into an Anthropic error event carrying the upstream's whole error, request_id included", async () => {
    const upstream = await slowUpstream(400, (res) => {
      res.writeHead(529, { 'content-type': 'application/json' });
      res.end('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}');
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/v1/messages', provider: 'anthropic', policy: { earlyCommitMs: 100 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/v1/messages`, { ...chat, body: JSON.stringify({ model: 'm', stream: true, max_tokens: 16, messages: [] }) });
    expect(r.status).toBe(200);
    expect(r.text.replace(/: ping\n\n/g, '')).toBe('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}\n\n');
  });

  it('relays a multi-line Anthropic error answer after an early commit as one error event whose data lines join to it', async () => {
    const answer = { type: 'error', error: { type: 'invalid_request_error', message: 'bad', details: { field: 'max_tokens' } }, request_id: 'req_2' };
    const upstream = await slowUpstream(400, (res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer, null, 2));
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/v1/messages', provider: 'anthropic', policy: { earlyCommitMs: 100 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/v1/messages`, { ...chat, body: JSON.stringify({ model: 'm', stream: true, max_tokens: 16, messages: [] }) });
    const frames = r.text.split('\n\n').filter((f) => f.startsWith('event: error'));
    expect(frames).toHaveLength(1);
    const data = (frames[0] as string).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
    expect(data.length).toBeGreaterThan(1);
    expect(JSON.parse(data.join('\n'))).toEqual(answer);
  });

  it("turns an upstream error after an early commit into a Responses error event and response.failed carrying the upstream's error", async () => {
    const upstream = await slowUpstream(400, (res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"Invalid model","type":"invalid_request_error","code":"model_not_found","param":"model"}}');
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/v1/responses', provider: 'openai', api: 'responses', policy: { earlyCommitMs: 100 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/v1/responses`, { ...chat, body: JSON.stringify({ model: 'm', stream: true, input: 'hi' }) });
    expect(r.status).toBe(200);
    const events = r.text.split('\n\n').filter((f) => f.startsWith('event: '));
    expect(events.map((e) => e.slice(7, e.indexOf('\n')))).toEqual(['error', 'response.failed']);
    const error = { message: 'Invalid model', type: 'invalid_request_error', code: 'model_not_found', param: 'model' };
    expect(JSON.parse(events[0].slice(events[0].indexOf('data: ') + 6))).toEqual({ type: 'error', sequence_number: 0, code: error.code, message: error.message, param: error.param, error });
    expect(JSON.parse(events[1].slice(events[1].indexOf('data: ') + 6))).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: error.code, message: error.message } } });
  });

  it('keeps the upstream HTTP status when early commit is off (the default)', async () => {
    const upstream = await slowUpstream(300, (res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"overloaded"}');
    });
    closers.push(upstream.close);
    const { gw } = await gatewayFor(upstream.url, { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, policy: { heartbeatMs: 50 } });
    closers.push(() => gw.close());
    const r = await timedRequest(`${gw.url}/events`);
    expect(r.status).toBe(503);
    expect(r.text).toBe('{"error":"overloaded"}');
  });

  it('aborts the upstream request when the client leaves after an early commit', async () => {
    let upstreamClosed = false;
    const upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      res.on('close', () => (upstreamClosed = true)); // never answers
    });
    closers.push(upstream.close);
    const { gw, logs } = await gatewayFor(upstream.url, { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, policy: { earlyCommitMs: 50, heartbeatMs: 50 } });
    closers.push(() => gw.close());
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/events`, { signal: controller.signal });
    expect(res.status).toBe(200);
    controller.abort();
    const deadline = Date.now() + 3000;
    while (!upstreamClosed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(upstreamClosed).toBe(true);
    while (logs.streams().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(logs.streams().at(-1)).toMatchObject({ outcome: 'client_closed' });
  });
});
