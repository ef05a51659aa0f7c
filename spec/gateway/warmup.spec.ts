import http from 'node:http';
import type net from 'node:net';
import { createGatewayApp } from '../../src/gateway/app';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { GatewayMetrics } from '../../src/gateway/metrics';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { startWarmupUpstreams, WARMUP_EVENT_GAP_MS, warmUp, warmupRoutes } from '../../src/gateway/warmup';
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

  it('relays its streams through every self-contained stream route, none failing, between two log lines', () => {
    const routes = ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/events'];
    const messages = logs.lines.map((l) => l.message);
    expect(messages.filter((m) => m === 'warming up' || m === 'warm-up done')).toEqual(['warming up', 'warm-up done']);
    expect(logs.lines.find((l) => l.message === 'warming up')).toMatchObject({ level: 'info', streams: 60, routes });
    expect(logs.lines.find((l) => l.message === 'warm-up done')).toMatchObject({ level: 'info', streams: 60, failed: 0, routes });
    expect(messages.indexOf('warm-up done')).toBeLessThan(messages.indexOf('gateway listening'));
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
  const started: RunningGateway[] = [];
  afterEach(async () => {
    for (const gw of started.splice(0)) await gw.close();
  });
  /** A gateway started with `config` (port 0) and `metrics`, and the lines it logged. */
  async function start(config: Record<string, unknown>, metrics?: GatewayMetrics): Promise<CaptureTransport> {
    const logs = new CaptureTransport();
    started.push(await startGateway(parseConfig({ port: 0, ...config }), { logger: createLogger({ transports: [logs] }), metrics }));
    return logs;
  }
  const warmLines = (logs: CaptureTransport) => logs.lines.filter((l) => String(l.message).startsWith('warm'));

  it('is off for startGateway() unless warmup.streams is set', async () => {
    expect(warmLines(await start({}))).toEqual([]);
  });

  it('keeps below the admission limits, so none of its streams is refused', async () => {
    const logs = await start({ warmup: { streams: 24 }, limits: { maxStreamsPerClient: 1 } });
    expect(logs.lines.filter((l) => l.message === 'warm-up done')).toMatchObject([{ streams: 24, failed: 0 }]);
  });

  it('warms only routes whose path is a URL as written, not a pattern or a path a request must encode', async () => {
    const routes = ['/plain-1.x', '/opt{/more}', '/star/*rest', '/model/:id', '/with space', '/caf\u00e9'].map((path) => ({ path, provider: 'openai', api: 'chat', upstreamPath: '/v1/chat/completions' }));
    const logs = await start({ warmup: { streams: 12 }, routes });
    expect(logs.lines.filter((l) => l.message === 'warm-up done')).toMatchObject([{ level: 'info', streams: 12, failed: 0, routes: ['/plain-1.x'] }]);
  });

  it('says it skipped when no route can be warmed', async () => {
    const logs = await start({ warmup: { streams: 12 }, routes: [{ path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/events', resumable: true }] });
    expect(warmLines(logs)).toMatchObject([{ message: 'warm-up skipped', reason: expect.stringContaining('no route') }]);
  });

  it('skips, and leaves untouched, metrics the embedder shares', async () => {
    const metrics = new GatewayMetrics();
    metrics.streams.inc({ route: '/elsewhere', outcome: 'completed' }, 3);
    const logs = await start({ warmup: { streams: 12 } }, metrics);
    expect(warmLines(logs)).toMatchObject([{ message: 'warm-up skipped', reason: expect.stringContaining('metrics') }]);
    expect((await metrics.streams.get()).values).toEqual([expect.objectContaining({ labels: { route: '/elsewhere', outcome: 'completed' }, value: 3 })]);
  });

  it('skips the routes whose bodies are smaller than its requests', async () => {
    const logs = await start({ warmup: { streams: 12 }, limits: { maxRequestBodyBytes: 10 } });
    expect(warmLines(logs)).toMatchObject([{ message: 'warm-up skipped', reason: expect.stringContaining('smaller bodies') }]);
  });

  it('leaves no refusal of its own in the logs, even one summed up after it', async () => {
    // Every warm-up request is refused (its body holds more than 2 JSON values), more than the
    // refusal log writes in a second: the rest wait for a summary line at the second's end.
    const logs = await start({ warmup: { streams: 24 }, limits: { maxRequestBodyValues: 2 } });
    await new Promise((r) => setTimeout(r, 1200));
    expect(logs.lines.filter((l) => l.message === 'warm-up done')).toMatchObject([{ level: 'warn', streams: 24, failed: 24 }]);
    expect(logs.lines.filter((l) => l.message === 'refused' || l.message === 'refusals suppressed')).toEqual([]);
  });

  it('refuses a count that is not a whole number of at most 100000', () => {
    expect(() => parseConfig({ warmup: { streams: -1 } })).toThrow(/warmup\.streams/);
    expect(() => parseConfig({ warmup: { streams: 1.5 } })).toThrow(/warmup\.streams/);
    expect(() => parseConfig({ warmup: { streams: 100_001 } })).toThrow(/warmup\.streams/);
  });
});

describe('warm-up streams', () => {
  const noLimits = { maxConnections: 0, maxStreams: 0, maxStreamsPerClient: 0 };
  /** A gateway app with `route` alone (its upstream never asked), and the routes a warm-up takes from it. */
  const appWith = (route: Record<string, unknown>) => {
    const config = parseConfig({ port: 0, upstream: { url: 'http://127.0.0.1:9' }, routes: [route] });
    const app = createGatewayApp(config, { logger: createLogger({ silent: true }) });
    return { app, routes: warmupRoutes(app.gateway.routes, new Set(), config.limits.maxRequestBodyBytes) };
  };

  it('are served by one server from the factory the gateway builds its own with', async () => {
    const { app, routes } = appWith({ path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/events' });
    const servers: http.Server[] = [];
    let requests = 0;
    const createServer = () => {
      const server = http.createServer(app).on('request', () => requests++);
      servers.push(server);
      return server;
    };
    const result = await warmUp(app, createServer, { streams: 12, limits: noLimits, routes });
    expect(result).toMatchObject({ streams: 12, failed: 0 });
    expect(servers).toHaveLength(1);
    expect(requests).toBe(12);
    expect(servers[0]?.listening).toBe(false);
  });

  /** When each chunk of the answer to `route`'s warm-up request arrived (ms), and the answer. */
  async function readWarmupUpstream(route: Record<string, unknown>, body?: string) {
    const [resolved] = appWith(route).routes;
    if (resolved === undefined) throw new Error(`no route ${String(route.path)} to warm`);
    const upstreams = await startWarmupUpstreams([resolved]);
    try {
      const url = upstreams.urlOf(resolved);
      return await new Promise<{ at: number[]; text: string }>((resolve, reject) => {
        const req = http.request(url, { method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          const at: number[] = [];
          let text = '';
          res.on('data', (chunk: Buffer) => {
            at.push(performance.now());
            text += chunk.toString();
          });
          res.on('end', () => resolve({ at, text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    } finally {
      await upstreams.close();
    }
  }

  it('get their passthrough events apart in time, as a model server writes its tokens', async () => {
    const { at, text } = await readWarmupUpstream({ path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/events', terminator: { event: 'done' } });
    expect(text).toBe('data: warm-up\n\nevent: done\ndata: \n\n');
    // A timer of whole ms may fire up to 1 ms early.
    expect((at.at(-1) as number) - (at[0] as number)).toBeGreaterThanOrEqual(WARMUP_EVENT_GAP_MS - 1);
  });

  it('end with a terminator of several lines as an upstream writes it, one data line each', async () => {
    const { text } = await readWarmupUpstream({ path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/events', terminator: { event: 'done', data: 'a\nb' } });
    expect(text).toBe('data: warm-up\n\nevent: done\ndata: a\ndata: b\n\n');
  });

  it('relay a route whose terminator has several lines to its end, with no truncation error', async () => {
    const { app, routes } = appWith({ path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/events', terminator: { data: 'a\nb' } });
    const bodies: string[] = [];
    // What each connection's socket was given to send: the response's head and body.
    const createServer = () =>
      http.createServer(app).on('connection', (socket: net.Socket) => {
        let sent = '';
        const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
        socket.write = ((chunk: unknown, ...rest: unknown[]) => {
          sent += String(chunk);
          return write(chunk, ...rest);
        }) as typeof socket.write;
        socket.once('close', () => bodies.push(sent));
      });
    expect(await warmUp(app, createServer, { streams: 4, limits: noLimits, routes })).toMatchObject({ streams: 4, failed: 0 });
    // A socket's 'close' may come a turn after the warm-up resolved.
    for (let i = 0; i < 50 && bodies.length < 4; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(bodies).toHaveLength(4);
    for (const body of bodies) {
      expect(body).toContain('data: a\ndata: b\n\n');
      expect(body).not.toContain('event: error');
    }
  });

  it('get their OpenAI chat tokens apart in time, as a model server writes them', async () => {
    const body = JSON.stringify({ model: 'warmup', stream: true, max_tokens: 3, messages: [{ role: 'user', content: 'warm-up' }] });
    const { at, text } = await readWarmupUpstream({ path: '/v1/chat/completions', provider: 'openai' }, body);
    expect(text).toContain('data: [DONE]');
    expect((at.at(-1) as number) - (at[0] as number)).toBeGreaterThanOrEqual(2 * WARMUP_EVENT_GAP_MS - 1);
  });
});
