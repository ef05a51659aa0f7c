/**
 * Warm-up: a new gateway process runs its own streams before it listens, so its first clients
 * meet code V8 has already compiled and optimized.
 *
 * A fresh Node process runs each function in the interpreter first and compiles the ones that
 * stay hot (TurboFan) while they serve; for tidegate's stream set-up that takes about 4,000
 * streams, during which each costs up to twice its later main-thread time (docs/internals.md,
 * "Stream set-up"). A gateway started into traffic (a deploy, a scale-out during a burst) would
 * pay that on its first clients' time to first byte. So before it listens, the gateway relays
 * `warmup.streams` short streams through the very app and server options it then serves with,
 * against upstreams of its own on 127.0.0.1; the real upstreams never see them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSimulator, type Simulator } from '../simulator';
import type { GatewayApp } from './app';
import { API_SPECS, type AdmissionLimits, type ResolvedRoute, type RouteApi } from './config';
import { applyListenerBounds } from './kernel-bounds';

/** What a warm-up did. */
export interface WarmupResult {
  /** Streams relayed: `options.streams`, fewer when {@link WARMUP_TIME_LIMIT_MS} passed first. */
  streams: number;
  /** Streams that did not answer 200 with an event stream (a warm-up that fails them is a bug to report). */
  failed: number;
  /** Paths of the routes warmed. */
  routes: string[];
  /** Wall time, ms. */
  ms: number;
}

/** A warm-up starts no stream after this long, ms: a slow machine starts late, never not at all. */
export const WARMUP_TIME_LIMIT_MS = 30_000;

/** A warm-up stream not ended after this long is cut and counted failed, ms. */
export const WARMUP_STREAM_TIMEOUT_MS = 10_000;

/** Streams a warm-up keeps open at once, at most. */
export const WARMUP_CONCURRENCY = 16;

/**
 * How far apart a warm-up upstream writes a stream's events, ms. A model server writes its
 * tokens apart in time, so in service the relay reads a stream's later events one by one, each
 * from a timer's turn of the event loop; the warm-up's streams take that path too, not only the
 * one where every event arrives in the first read.
 */
export const WARMUP_EVENT_GAP_MS = 2;

/** What {@link warmUp} runs. */
export interface WarmupOptions {
  /** Streams to relay in all (0: none). */
  streams: number;
  /** Admission limits of the app (0: no limit): the warm-up keeps below each. */
  limits: Pick<AdmissionLimits, 'maxConnections' | 'maxStreams' | 'maxStreamsPerClient'>;
  /** The app's routes to warm, as {@link warmupRoutes} picks them. */
  routes: readonly ResolvedRoute[];
}

/**
 * The routes a warm-up relays streams through: the event-stream routes whose streams are
 * self-contained. Left out: non-stream routes (`stream: false`, JSON APIs), resumable routes
 * (their streams would enter the resume store, Redis included), routes with a policy function
 * of the embedder's (user code with effects of its own), and routes whose warm-up request body
 * is over `maxRequestBodyBytes` (bytes; every one of its streams would be refused 413).
 */
export function warmupRoutes(routes: readonly ResolvedRoute[], policyPaths: ReadonlySet<string>, maxRequestBodyBytes: number): ResolvedRoute[] {
  return routes.filter(
    (r) =>
      API_SPECS[r.api].streams &&
      r.stream &&
      r.resume === undefined &&
      !r.resumable &&
      !policyPaths.has(r.path) &&
      LITERAL_PATH.test(r.path) &&
      Buffer.byteLength(requestBodyOf(r) ?? '') <= maxRequestBodyBytes,
  );
}

/**
 * A route path a warm-up can request as it is written: ASCII letters, digits and `-._~$&',;=@/`.
 * Parameters (`:model`), Express patterns (`{/opt}`, `*rest`) and paths a request must
 * percent-encode (a space, `é`, `#`) are left out: their written form is not a URL they answer.
 */
const LITERAL_PATH = /^\/[A-Za-z0-9\-._~$&',;=@/]*$/;

/**
 * Relays `options.streams` streams through `app` before it serves: round-robin over
 * `options.routes`, {@link WARMUP_CONCURRENCY} at a time (fewer when a limit of
 * `options.limits` is lower), for at most {@link WARMUP_TIME_LIMIT_MS}, each a new connection to
 * a private listener on 127.0.0.1 from `createServer` (built as the gateway's own server, so its
 * requests, responses and sockets have the hidden classes V8 then meets in service). While it
 * runs, the routes' upstream URLs point at {@link startWarmupUpstreams}' servers, whose events
 * come {@link WARMUP_EVENT_GAP_MS} apart. Before it resolves or rejects, every warm-up stream has
 * ended in the app (waited for up to {@link WARMUP_SETTLE_MS}, then cut), the URLs are restored,
 * and the listener, the upstreams and their sockets are closed. The caller silences the app's
 * logger and resets its metrics around it (see `startGateway`).
 *
 * @param app the gateway app, not yet serving.
 * @param createServer a new HTTP server for `app`, as the gateway's own is built, not listening.
 */
export async function warmUp(app: GatewayApp, createServer: () => http.Server, options: WarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  const { streams, limits, routes } = options;
  if (streams === 0 || routes.length === 0) return { streams: 0, failed: 0, routes: [], ms: 0 };
  const upstreams = await startWarmupUpstreams(routes);
  const saved = routes.map((r) => r.url);
  const server = createServer();
  try {
    routes.forEach((r) => (r.url = upstreams.urlOf(r)));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    applyListenerBounds(server, app.gateway.routes);
    const { port } = server.address() as AddressInfo;
    let next = 0;
    let failed = 0;
    const stopAt = started + WARMUP_TIME_LIMIT_MS;
    const worker = async (): Promise<void> => {
      while (next < streams && performance.now() < stopAt) {
        const route = routes[next++ % routes.length] as ResolvedRoute;
        if (!(await relayOne(port, route))) failed++;
      }
    };
    const caps = [limits.maxConnections, limits.maxStreams, limits.maxStreamsPerClient].filter((v) => v > 0);
    await Promise.all(Array.from({ length: Math.min(WARMUP_CONCURRENCY, streams, ...caps) }, worker));
    return { streams: next, failed, routes: routes.map((r) => r.path), ms: Math.round(performance.now() - started) };
  } finally {
    // A stream's client side can end before the app's (a cut warm-up stream): none may outlive
    // the warm-up, or it would log and count after the caller unsilenced and reset.
    await settled(app, WARMUP_SETTLE_MS);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await settled(app, WARMUP_SETTLE_MS);
    routes.forEach((r, i) => (r.url = saved[i]));
    await upstreams.close();
  }
}

/** How long a warm-up waits for the app's streams to end, ms: once before it cuts their connections, once after. */
export const WARMUP_SETTLE_MS = 2_000;

/** Resolves once `app` relays no stream and holds no unflushed answer, or after `ms`. */
async function settled(app: GatewayApp, ms: number): Promise<void> {
  for (const until = performance.now() + ms; (app.gateway.activeStreams > 0 || app.gateway.flushing > 0) && performance.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The body of a warm-up request to `route`: JSON for a route that takes POST, none for a GET-only one. */
function requestBodyOf(route: ResolvedRoute): string | undefined {
  return route.methods.includes('POST') ? bodyFor(route.api) : undefined;
}

/** The request body a client of `api` sends for a short stream. */
function bodyFor(api: RouteApi): string {
  const messages = [{ role: 'user', content: 'warm-up' }];
  switch (api) {
    case 'responses':
      return JSON.stringify({ model: 'warmup', stream: true, input: 'warm-up', max_output_tokens: 3 });
    case 'completions':
      return JSON.stringify({ model: 'warmup', stream: true, prompt: 'warm-up', max_tokens: 3 });
    default:
      return JSON.stringify({ model: 'warmup', stream: true, max_tokens: 3, messages });
  }
}

/** One stream through `route` on a new connection, read to its end: whether it answered 200 (never rejects). */
function relayOne(port: number, route: ResolvedRoute): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const body = requestBodyOf(route);
    const post = body !== undefined;
    const headers: http.OutgoingHttpHeaders = { accept: 'text/event-stream' };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const req = http.request({ host: '127.0.0.1', port, path: route.path, method: post ? 'POST' : 'GET', headers, agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode === 200));
      res.once('error', () => resolve(false));
    });
    req.once('error', () => resolve(false));
    req.setTimeout(WARMUP_STREAM_TIMEOUT_MS, () => req.destroy());
    req.end(body);
  }).catch(() => false); // http.request throws for a request it cannot send
}

/** The warm-up's own upstreams: where each route points while it runs, and how to close them. */
export interface WarmupUpstreams {
  /** The URL `route` points at while the warm-up runs. */
  urlOf(route: ResolvedRoute): string;
  /** Closes the upstreams and their connections. */
  close(): Promise<void>;
}

/**
 * Starts the upstreams {@link warmUp} points `routes` at, on 127.0.0.1 ports of their own: an
 * embedded simulator for the OpenAI and Anthropic routes (no first-token delay, tokens
 * {@link WARMUP_EVENT_GAP_MS} apart), an SSE server for passthrough routes (`data: warm-up` with
 * the head, the route's terminator, else one more such event, {@link WARMUP_EVENT_GAP_MS} later).
 */
export async function startWarmupUpstreams(routes: readonly ResolvedRoute[]): Promise<WarmupUpstreams> {
  let simulator: Simulator | undefined;
  let sse: http.Server | undefined;
  let simUrl = '';
  let sseUrl = '';
  if (routes.some((r) => r.provider !== 'passthrough')) {
    simulator = createSimulator({ ttftMs: 0, tokensPerSecond: 1000 / WARMUP_EVENT_GAP_MS });
    simUrl = (await simulator.listen(0, '127.0.0.1')).url;
  }
  if (routes.some((r) => r.provider === 'passthrough')) {
    sse = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('data: warm-up\n\n');
      setTimeout(() => {
        if (!res.destroyed) res.end(terminatorFor(req.url ?? '/', routes));
      }, WARMUP_EVENT_GAP_MS);
    });
    await new Promise<void>((resolve) => sse?.listen(0, '127.0.0.1', resolve));
    sseUrl = `http://127.0.0.1:${(sse.address() as AddressInfo).port}`;
  }
  return {
    urlOf: (r) => (r.provider === 'passthrough' ? `${sseUrl}/${routes.indexOf(r)}` : `${simUrl}${API_SPECS[r.api].path}`),
    close: async () => {
      await simulator?.close();
      if (sse !== undefined) {
        const closed = new Promise<void>((resolve) => sse?.close(() => resolve()));
        sse.closeAllConnections();
        await closed;
      }
    },
  };
}

/**
 * The last event of a passthrough route's warm-up stream: its configured terminator, else one
 * more plain event. A terminator's data of several lines takes a `data:` line each, as an
 * upstream writes it and the SSE decoder joins it again.
 */
function terminatorFor(path: string, routes: readonly ResolvedRoute[]): string {
  const t = routes[Number(path.slice(1))]?.terminator;
  if (t === undefined) return 'data: warm-up\n\n';
  const data = (t.data ?? '').split('\n').map((line) => `data: ${line}\n`).join('');
  return `${t.event !== undefined ? `event: ${t.event}\n` : ''}${data}\n`;
}
