import http, { type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Express } from 'express';
import { createSimulator, type Simulator } from '../simulator';
import { createGatewayApp, describeEndpoint, type GatewayApp, type GatewayDeps } from './app';
import type { GatewayConfig } from './config';
import { deferContinue } from './expect-continue';
import { applyListenerBounds } from './kernel-bounds';
import { createLogger, type Logger } from './logger';
import { warmUp, warmupRoutes, type WarmupOptions } from './warmup';
import { playgroundExposure } from '../playground/exposure';

/** A running gateway. */
export interface RunningGateway {
  /** `http://host:port` of the gateway. */
  url: string;
  port: number;
  /** The upstream base in use: the configured one, or the embedded simulator's URL. */
  upstreamUrl: string;
  server: Server;
  app: GatewayApp;
  /** The embedded simulator, when no upstream URL was configured. */
  simulator?: Simulator | undefined;
  /**
   * Graceful stop: while running streams may finish for `graceMs` (default
   * `config.shutdown.graceMs`), the gateway keeps accepting connections, `/readyz` answers 503,
   * new stream requests 503 `ERR_TIDEGATE_SHUTDOWN` with `Retry-After`, every answer with
   * `Connection: close`; then the streams left end with `ERR_TIDEGATE_SHUTDOWN`, the listener,
   * idle connections and the embedded simulator are closed.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Immediate stop: `shutdown(0)`. */
  close(): Promise<void>;
}

/**
 * Starts the standalone gateway: the embedded simulated upstream when `config.upstream.url` is
 * absent, then, with `config.warmup.streams` set, that many streams through the app before it
 * serves ({@link warmUp}: a `warming up` line, its own lines silenced, its metrics reset, one
 * `warm-up done` line after; skipped with a `warm-up skipped` line when no route can be warmed
 * or `options.metrics` is given, whose registry a reset would clear for its other users), then
 * the HTTP server on `config.host:config.port` (port 0 = ephemeral). A port in use fails the
 * start before the warm-up, not after it. When the start fails (a config the app refuses, a port
 * in use) the embedded simulator is closed again before the error is thrown, and never logged as
 * started.
 */
export async function startGateway(config: GatewayConfig, options: Omit<GatewayDeps, 'upstreamUrl'> & { logger?: Logger | undefined } = {}): Promise<RunningGateway> {
  const logger = options.logger ?? createLogger();
  let upstreamUrl = config.upstream.url;
  let simulator: Simulator | undefined;
  if (upstreamUrl === undefined) {
    simulator = createSimulator({ tokensPerSecond: config.simulator.tokensPerSecond, ttftMs: config.simulator.ttftMs });
    upstreamUrl = (await simulator.listen(0, '127.0.0.1')).url;
  }
  let app: GatewayApp;
  let server: Server;
  try {
    app = createGatewayApp(config, { ...options, logger, upstreamUrl });
    const serverOptions = expressServerOptions(app);
    const streams = config.warmup.streams ?? 0;
    if (streams > 0) {
      if (config.port !== 0) await checkBindable(config.host, config.port);
      const routes = warmupRoutes(app.gateway.routes, new Set(Object.keys(options.policies ?? {})), config.limits.maxRequestBodyBytes);
      if (options.metrics !== undefined) logger.info('warm-up skipped', { reason: 'the metrics are shared (options.metrics): a warm-up would count its streams there' });
      else await warmUpQuietly(app, () => gatewayServer(app, serverOptions, config), { streams, limits: config.limits, routes }, logger);
    }
    server = gatewayServer(app, serverOptions, config);
    server.listen({ port: config.port, host: config.host, backlog: config.limits.backlog });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
  } catch (err) {
    // A config the app refuses, a port taken: the simulator started for it goes, unannounced.
    await simulator?.close();
    throw err;
  }
  // Logged once the gateway in front of it listens: a start that fails never announces it.
  if (simulator !== undefined) logger.info('simulator started', { url: upstreamUrl });
  applyListenerBounds(server, app.gateway.routes);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info('gateway listening', {
    url,
    upstream: config.upstream.url ? 'configured' : 'simulator',
    routes: app.gateway.endpoints.map((e) => describeEndpoint(e, true)),
    playground: playgroundExposure(config.playground.enabled, config.host),
  });
  let stopping: Promise<void> | undefined;
  const shutdown = (graceMs = config.shutdown.graceMs): Promise<void> =>
    (stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
      // Still listening while streams drain: a load balancer's probe gets /readyz 503 and a new
      // request 503 with Retry-After (each with Connection: close), not a refused connection.
      await app.gateway.drain(graceMs);
      // The last frames (e.g. ERR_TIDEGATE_SHUTDOWN) flush before connections are cut, for up to
      // FLUSH_WAIT_MS: http's close() counts a connection idle once `res.end()` was called, and
      // cuts it, though its last bytes may still wait in Node for a slow reader.
      const flushBy = Date.now() + FLUSH_WAIT_MS;
      while (app.gateway.flushing > 0 && Date.now() < flushBy) await new Promise((r) => setTimeout(r, 25));
      // http's close(): stops accepting, closes idle connections and stops the header/request
      // timeout checks.
      server.close();
      const poll = setInterval(() => server.closeIdleConnections(), 25);
      let flushWait: NodeJS.Timeout | undefined;
      const flushed = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => (flushWait = setTimeout(() => r(false), Math.max(0, flushBy - Date.now()))))]);
      // The race's loser must not hold the process (a test runner's worker) for another second.
      clearTimeout(flushWait);
      clearInterval(poll);
      if (!flushed) server.closeAllConnections();
      await closed;
      await simulator?.close();
      logger.info('gateway stopped');
    })());
  return { url, port, upstreamUrl, server, app, simulator, shutdown, close: () => shutdown(0) };
}

/**
 * {@link warmUp} between a `warming up` line and a `warm-up done` line (`warn` when streams
 * failed), with `logger` silent meanwhile (a line per warm-up stream is noise) and the app's
 * refusal-log summary and metrics reset after it, so logs and `/metrics` count only real clients.
 * Without a route to warm it logs `warm-up skipped`. A warm-up that throws (its own upstreams
 * cannot listen) logs `warm-up failed` and the gateway starts cold.
 */
async function warmUpQuietly(app: GatewayApp, createServer: () => http.Server, options: WarmupOptions, logger: Logger): Promise<void> {
  const { routes } = options;
  if (routes.length === 0) {
    logger.info('warm-up skipped', { reason: 'no route to warm: each is resumable, non-stream, parameterized, runs a policy function or takes smaller bodies than a warm-up request' });
    return;
  }
  logger.info('warming up', { streams: options.streams, routes: routes.map((r) => r.path) });
  const silent = logger.silent;
  logger.silent = true;
  try {
    const result = await warmUp(app, createServer, options);
    logger.silent = silent;
    logger.log(result.failed > 0 ? 'warn' : 'info', 'warm-up done', { ...result });
  } catch (err) {
    // The gateway serves cold rather than not at all: a warm-up is an optimization.
    logger.silent = silent;
    logger.warn('warm-up failed', { error: (err as Error)?.message ?? String(err) });
  } finally {
    logger.silent = true;
    app.gateway.admission.flushLog();
    logger.silent = silent;
    app.gateway.metrics.registry.resetMetrics();
  }
}

/**
 * The gateway's HTTP server for `app`, not yet listening: `serverOptions` with the timeouts of
 * `config.limits`, each connection tracked by the app's admission, `100 Continue` deferred. The
 * warm-up's private listener is built here too, so its requests, responses and sockets are the
 * very kinds the gateway then serves.
 */
function gatewayServer(app: GatewayApp, serverOptions: http.ServerOptions, config: GatewayConfig): Server {
  const server = http.createServer({ ...serverOptions, ...serverTimeouts(config) }, app);
  server.on('connection', (socket: net.Socket) => app.gateway.admission.trackConnection(socket));
  deferContinue(server);
  return server;
}

/**
 * Binds `host:port` and frees it again: a port in use or an address the host does not have
 * fails the start at once, before a warm-up of seconds, with the error the listen would give.
 */
async function checkBindable(host: string, port: number): Promise<void> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen({ port, host }, resolve));
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** How long a drained gateway waits for its streams' last bytes to leave before it cuts the connections, ms. */
export const FLUSH_WAIT_MS = 1000;

/**
 * Node's request timeouts from `config.limits`: headers within `headersTimeoutMs`; the whole
 * request (headers and body, not the response: a stream may last longer) within
 * `headersTimeoutMs + requestBodyTimeoutMs` plus a second, a backstop behind the body reader's
 * own timeout, which answers first in the route's error shape. `requestBodyTimeoutMs: 0` turns
 * the backstop off. Timeouts are checked every second (Node's default is 30 s).
 */
export function serverTimeouts(config: GatewayConfig): Pick<http.ServerOptions, 'headersTimeout' | 'requestTimeout' | 'connectionsCheckingInterval'> {
  const { headersTimeoutMs, requestBodyTimeoutMs } = config.limits;
  return {
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestBodyTimeoutMs === 0 ? 0 : headersTimeoutMs + requestBodyTimeoutMs + 1000,
    connectionsCheckingInterval: 1000,
  };
}

/**
 * `http.createServer()` options whose requests and responses are born with the app's prototypes.
 * Express otherwise re-parents every `req` and `res` with `Object.setPrototypeOf()`, and V8 then
 * gives each of them a hidden class of its own (a map and a descriptor array, about 2 KB per
 * request, held as long as the stream runs). Here `app.request` and `app.response` become the
 * prototypes of two subclasses of Node's `IncomingMessage` and `ServerResponse` (same prototype
 * chain, same own properties), whose instances share one hidden class with fast properties, and
 * Express's `setPrototypeOf()` changes nothing. (A function constructor with `Reflect.construct`
 * and `app.request` itself as prototype was tried: its instances got few in-object slots and cost
 * ~11 KB more per stream.) The old objects inherit from the new ones, so sub-apps mounted earlier
 * see later extensions. Call it once per app, before serving.
 */
export function expressServerOptions(app: Express): http.ServerOptions {
  const adopt = <T extends object>(base: new (...args: never[]) => T, key: 'request' | 'response'): unknown => {
    const Born = class extends (base as new (...args: never[]) => object) {};
    const proto = app[key] as object;
    Object.setPrototypeOf(Born.prototype, Object.getPrototypeOf(proto));
    Object.defineProperties(Born.prototype, Object.getOwnPropertyDescriptors(proto));
    (app as unknown as Record<string, unknown>)[key] = Born.prototype;
    // Sub-apps mounted before this call inherit from the old object: it now inherits from the new
    // one, so what is added to app.request / app.response later reaches them too.
    Object.setPrototypeOf(proto, Born.prototype);
    return Born;
  };
  return {
    IncomingMessage: adopt(http.IncomingMessage, 'request') as typeof http.IncomingMessage,
    ServerResponse: adopt(http.ServerResponse, 'response') as typeof http.ServerResponse,
  };
}

