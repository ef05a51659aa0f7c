import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport, parsePrometheus } from './helpers';

/** An upstream that counts what reaches it and answers every request with a short event stream. */
async function countingUpstream() {
  const seen: string[] = [];
  const server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\ndata: [DONE]\n\n');
  });
  return { ...server, seen };
}

describe('warm-up before the gateway listens', () => {
  let upstream: Awaited<ReturnType<typeof countingUpstream>>;
  let gw: RunningGateway;
  const logs = new CaptureTransport();
  const policyCalls: string[] = [];

  beforeAll(async () => {
    upstream = await countingUpstream();
    const config = parseConfig({
      port: 0,
      upstream: { url: upstream.url, apiKey: 'sk-real' },
      warmup: { streams: 60 },
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/responses', provider: 'openai' },
        { path: '/v1/messages', provider: 'anthropic' },
        { path: '/events', provider: 'passthrough', url: `${upstream.url}/events`, terminator: { event: 'done' } },
        { path: '/whole', provider: 'openai', api: 'chat', upstreamPath: '/v1/chat/completions', stream: false },
        { path: '/resumable', provider: 'passthrough', url: `${upstream.url}/events`, resumable: true },
        { path: '/policed', provider: 'openai', api: 'chat', upstreamPath: '/v1/chat/completions' },
      ],
    });
    gw = await startGateway(config, {
      logger: createLogger({ transports: [logs] }),
      policies: {
        '/policed': (events) => {
          policyCalls.push('called');
          return events;
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('relays its streams through every self-contained stream route, none failing, with one log line', () => {
    const done = logs.lines.filter((l) => l.message === 'warm-up done');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ level: 'info', streams: 60, failed: 0, routes: ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/events'] });
    expect(logs.streams()).toHaveLength(0);
  });

  it('never reaches the configured upstream, and never runs a policy function', () => {
    expect(upstream.seen).toEqual([]);
    expect(policyCalls).toEqual([]);
  });

  it('leaves nothing in the metrics and no stream open', async () => {
    const metrics = parsePrometheus(await (await fetch(`${gw.url}/metrics`)).text());
    const streamed = [...metrics].filter(([name, value]) => name.startsWith('tidegate_streams_total') && value > 0);
    expect(streamed).toEqual([]);
    expect(gw.app.gateway.activeStreams).toBe(0);
  });

  it('restores every route to its configured upstream before serving', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [] }) });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"hi"');
    expect(upstream.seen).toEqual(['POST /v1/chat/completions']);
    expect(gw.app.gateway.routes.find((r) => r.path === '/events')?.url).toBe(`${upstream.url}/events`);
  });
});

describe('warm-up settings', () => {
  it('is off for startGateway() unless warmup.streams is set', async () => {
    const logs = new CaptureTransport();
    const gw = await startGateway(parseConfig({ port: 0 }), { logger: createLogger({ transports: [logs] }) });
    try {
      expect(logs.lines.filter((l) => l.message === 'warm-up done')).toEqual([]);
    } finally {
      await gw.close();
    }
  });

  it('keeps below the admission limits, so none of its streams is refused', async () => {
    const logs = new CaptureTransport();
    const gw = await startGateway(parseConfig({ port: 0, warmup: { streams: 24 }, limits: { maxStreamsPerClient: 1 } }), { logger: createLogger({ transports: [logs] }) });
    try {
      expect(logs.lines.filter((l) => l.message === 'warm-up done')).toMatchObject([{ streams: 24, failed: 0 }]);
    } finally {
      await gw.close();
    }
  });

  it('refuses a count that is not a whole number of at most 100000', () => {
    expect(() => parseConfig({ warmup: { streams: -1 } })).toThrow(/warmup\.streams/);
    expect(() => parseConfig({ warmup: { streams: 1.5 } })).toThrow(/warmup\.streams/);
    expect(() => parseConfig({ warmup: { streams: 100_001 } })).toThrow(/warmup\.streams/);
  });
});
