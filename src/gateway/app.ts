import { setMaxListeners } from 'node:events';
import { playgroundRouter } from '../playground';
import { arrivedOnLoopback, playgroundAudience } from '../playground/exposure';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { ShutdownError } from '../errors';
import { MAX_TIMER_MS } from '../flow/operators/operator-subscriber';
import type { ProviderAdapter } from '../providers/types';
import { AdmissionError, badRequestError, bindSlot, closeAfterResponse, createAdmission, hasUnreadBody, pipelineLimitError, type Admission, type BoundSlot } from './admission';
import { ConfigError, resolveRoutes, type GatewayConfig, type ResolvedRoute } from './config';
import { warnDoubledVersionPath } from './upstream-path-check';
import { warnSmallBudgets } from './budget-floor-check';
import { corsMiddleware } from './cors';
import { applyKernelBounds } from './kernel-bounds';
import { createLogger, type Logger } from './logger';
import { GatewayMetrics, type StreamSnapshot } from './metrics';
import { relay, type StreamPolicyFn } from './relay/relay';
import { continueBody } from './expect-continue';
import { inTurn, MAX_WAITING_REQUESTS } from './in-turn';
import { parseJsonBody, readRequestBody, RequestBodyAbortedError } from './request-body';
import { adapterFor } from './route-adapters';
import { modelIdProblem } from './upstream-url';
import { AllowedMethods, errorShapeFor, headWithGet, isJsonContentType, noRouteHandler, PLAIN_ERRORS, refuseHead } from './route-errors';
import { RESUME_PATH, recordResumeRefusal, serveResume, type ResumeEndpointDeps } from './resume/endpoints';
import { parseEventId } from './resume/ids';
import { RESPONSES_RETRIEVE_SUFFIX, retrieveQuery, serveResponsesRetrieve } from './resume/responses-endpoint';
import { ResumeService } from './resume/service';
import { redisStore } from './resume/redis-config';

/** What {@link createGatewayApp} needs besides the config. */
export interface GatewayDeps {
  /** Default: a JSON logger on stdout. */
  logger?: Logger | undefined;
  /** The upstream base URL actually used (config or the embedded simulator); default `config.upstream.url`. */
  upstreamUrl?: string | undefined;
  /** User-written operator chains by route path, e.g. `{ '/v1/chat/completions': (events) => events.pipe(…) }`. */
  policies?: Readonly<Record<string, StreamPolicyFn>> | undefined;
  /** Metrics to record into (default: a fresh registry per app). */
  metrics?: GatewayMetrics | undefined;
}

/** Controls of a gateway app: readiness, live streams, metrics and the drain used on shutdown. */
export interface GatewayControl {
  readonly metrics: GatewayMetrics;
  readonly routes: readonly ResolvedRoute[];
  /**
   * Every relay and resume endpoint as mounted, e.g. `GET /v1/models/{model} (openai)`: what the
   * startup log and the 404 answer name.
   */
  readonly endpoints: readonly ServedEndpoint[];
  /** Connection and stream caps (`limits`); the server feeds it each connection. */
  readonly admission: Admission;
  /** Requests being relayed now. */
  readonly activeStreams: number;
  /**
   * Responses of streams that ended whose last bytes Node still holds (`res.end()` was called,
   * not all of it is in the kernel yet): a connection cut now would lose them. The drain's
   * server waits for them before it closes idle connections.
   */
  readonly flushing: number;
  /** `false` once draining started: `/readyz` answers 503 and new relay requests get 503. */
  readonly ready: boolean;
  /**
   * Stops taking new streams, cancels at once the resumable streams no reader reads (detached),
   * answers at once a stream waiting to retry its upstream (with that upstream's last answer:
   * no new attempt starts while draining), lets running ones finish for `graceMs`, then ends the rest with
   * `ERR_TIDEGATE_SHUTDOWN` (in each client's protocol) and resolves once all have ended. A
   * `graceMs` past 2^31 − 1 (or `Infinity`) waits that longest timer, ~24.8 days.
   */
  drain(graceMs: number): Promise<void>;
}

/** One mounted endpoint: its methods, its path (parameters as `{name}`) and the provider that serves it. */
export interface ServedEndpoint {
  readonly methods: readonly string[];
  readonly path: string;
  readonly provider: string;
}

/** `GET|POST /events`, or with `provider`, `GET|POST /events (passthrough)`. */
export function describeEndpoint(e: ServedEndpoint, provider = false): string {
  return `${e.methods.join('|')} ${e.path}${provider ? ` (${e.provider})` : ''}`;
}

/** An Express app with its {@link GatewayControl} at `app.gateway`. */
export type GatewayApp = Express & { readonly gateway: GatewayControl };

/**
 * The gateway as an Express app: the configured routes (default OpenAI
 * `POST /v1/chat/completions` and Anthropic `POST /v1/messages`; passthrough routes for any SSE
 * upstream), `GET /healthz`, `GET /readyz`, `GET /metrics` (Prometheus text) and, with
 * `debug.streams`, `GET /debug/streams` (each live stream's {@link StreamSnapshot}).
 *
 * @example
 * const app = createGatewayApp(parseConfig({ upstream: { url } }), {
 *   policies: { '/v1/chat/completions': (events) => events.pipe(filter((e) => e.type !== 'frame')) },
 * });
 */
export function createGatewayApp(config: GatewayConfig, deps: GatewayDeps = {}): GatewayApp {
  // A raw object has none of the defaults parseConfig fills in (limits, stream, timeouts, ...).
  if (typeof config !== 'object' || config === null || config.limits === undefined) {
    throw new ConfigError('createGatewayApp takes a validated configuration: pass parseConfig(yourConfig) or loadConfig()');
  }
  const logger = deps.logger ?? createLogger();
  const metrics = deps.metrics ?? new GatewayMetrics();
  const routes = resolveRoutes(config, deps.upstreamUrl ?? config.upstream.url);
  checkRoutes(routes, deps.policies);
  applyKernelBounds(config, routes, logger);
  warnDoubledVersionPath(routes, logger);
  warnSmallBudgets(routes, logger);
  const shutdown = new AbortController();
  // Every running stream listens for shutdown; the default limit of 10 would warn of a leak.
  setMaxListeners(0, shutdown.signal);
  // Aborted as the drain starts: streams waiting to retry their upstream answer then (see RelayOptions.draining).
  const draining = new AbortController();
  setMaxListeners(0, draining.signal);
  const running = new Set<(reason: unknown) => void>();
  const idle: (() => void)[] = [];
  let ready = true;
  let active = 0;
  const admission = createAdmission(config.limits, metrics, logger);
  const adapterOf = new Map(routes.map((r) => [r.path, adapterFor(r)]));
  const resume = routes.some((r) => r.resume !== undefined) ? new ResumeService({ maxMemoryBytes: config.resumeStore.maxMemoryBytes, metrics, logger, redis: redisStore(config, routes, logger) }) : undefined;
  const resumeDeps: ResumeEndpointDeps | undefined = resume && {
    service: resume,
    logger,
    routeOf: (path) => routes.find((r) => r.path === path),
    adapterOf: (path) => adapterOf.get(path) ?? (PLAIN_ERRORS as ProviderAdapter),
    // As any other path: Anthropic's shape for an Anthropic SDK's request, else OpenAI's under /v1/.
    fallback: (req) => errorShapeFor(req, req.path, routes),
    signal: shutdown.signal,
    refused: admission.record,
  };
  /**
   * Admits a resume of `streamId`: on the slot its detached stream holds when the stream lends it
   * (the client taking its own stream over, see ResumeService.lendSlot), else on a slot of its
   * own, bound to the response. `undefined` when refused (the refusal is answered) or when the
   * client already left (nobody to answer).
   */
  const admitResume = (req: Request, res: Response, streamId: string | undefined, errorShape: Pick<ProviderAdapter, 'sendHttpError'>): BoundSlot | undefined => {
    if (res.closed) return undefined;
    const loan = streamId === undefined ? undefined : resume?.lendSlot(streamId);
    if (loan !== undefined) return bindSlot(loan, res);
    const release = admission.admitStream(req);
    if (release instanceof AdmissionError) {
      admission.refuse(req, res, errorShape, release);
      return undefined;
    }
    return bindSlot(release, res);
  };
  /**
   * Refuses a request the drain will not relay (it came while draining, or was still sending
   * its body): 503 `ERR_TIDEGATE_SHUTDOWN` in `shape`, with `Retry-After`
   * (`limits.retryAfterSeconds`) and `Connection: close`, counted and logged as any refusal
   * (reason `shutdown`, within the refusal log's rate limit, see Admission.record). A body not
   * read is not waited for (the connection lingers closed, see closeAfterResponse); an answer
   * that can no longer be written closes the connection.
   *
   * The line's `bodyComplete` says whether the whole body had arrived: it is written once the
   * read that brought the request's head is parsed to its end, since a request refused as its head
   * arrives has not had its body parsed yet, though the client sent it in the same packet.
   */
  const refuseDraining = (req: Request, res: Response, shape: Pick<ProviderAdapter, 'sendHttpError'>): void => {
    const error = new ShutdownError('gateway is shutting down; retry on another instance');
    const writable = !res.headersSent && !res.destroyed;
    if (writable) {
      res.setHeader('Connection', 'close');
      res.setHeader('Retry-After', String(config.limits.retryAfterSeconds));
      if (hasUnreadBody(req)) closeAfterResponse(req, res);
      shape.sendHttpError(res, error);
    } else req.socket.destroy();
    // Once the read that brought the head is parsed to its end (see the docstring).
    setImmediate(() => admission.record(req, writable ? 503 : 499, { code: error.code, reason: 'shutdown', bodyComplete: req.complete }));
  };
  /** The refusals of requests still sending their bodies, run when the drain starts. */
  const uploading = new Set<() => void>();
  /** Responses of ended streams not yet handed whole to the kernel (see GatewayControl.flushing). */
  const unflushed = new Set<Response>();
  /** Responses of running streams (relayed or resumed): those not answered yet when the drain begins are told to close. */
  const live = new Set<Response>();
  /** Runs one stream (relayed or resumed) on `res`, counted for readiness and the drain; its end ends `slot`. */
  const track = (res: Response, run: Promise<void>, slot?: BoundSlot | undefined): void => {
    active++;
    live.add(res);
    void run.finally(() => {
      live.delete(res);
      slot?.end();
      if (!res.writableFinished && !res.destroyed) {
        unflushed.add(res);
        res.once('close', () => unflushed.delete(res));
      }
      active--;
      if (active === 0) for (const resolve of idle.splice(0)) resolve();
    });
  };

  const app = express();
  app.disable('x-powered-by');
  // Before anything takes a slot or reads a body: a pipelined request waits for the answers ahead.
  app.use(
    inTurn({
      maxWaiting: MAX_WAITING_REQUESTS,
      refuse: (req, res) => {
        const path = (req as Request).path;
        admission.refuse(req, res, adapterOf.get(path) ?? errorShapeFor(req, path, routes), pipelineLimitError(MAX_WAITING_REQUESTS, config.limits.retryAfterSeconds));
      },
    }),
  );
  const endpoints: ServedEndpoint[] = [];
  /** What each path answers, `HEAD` only where it is answered: the `Allow` of a 405 there. */
  const allowed = new AllowedMethods();
  /** Records an endpoint as it is mounted (Express's `:name` shown as `{name}`), and the methods it answers (`allow`). */
  const served = (methods: readonly string[], path: string, provider: string, allow: readonly string[] = methods): void => {
    endpoints.push({ methods, path: path.replace(/:(\w+)/g, '{$1}'), provider });
    allowed.add(path, allow);
  };
  // Express answers HEAD with a GET handler: these are whole answers.
  const getAndHead = ['GET', 'HEAD'];
  // Only POST routes read a body. On any other request Node would read an unread body on after the
  // answer, at full speed, to keep the connection: it is closed after the answer instead, with
  // the lingering close's bound (CLOSE_LINGER_MS, CLOSE_LINGER_BYTES).
  app.use((req, res, next) => {
    if (req.method !== 'POST' && hasUnreadBody(req)) {
      res.setHeader('Connection', 'close');
      closeAfterResponse(req, res);
    } else if (!ready) {
      // Kept-alive clients are told to go elsewhere while draining (each gets its answer first),
      // a CORS preflight answered next included.
      res.setHeader('Connection', 'close');
    }
    next();
  });
  // First: refusals and errors carry the CORS headers too, so a page can read them.
  const corsHandler = corsMiddleware(config.cors);
  if (corsHandler) app.use(corsHandler);
  app.use((req, res, next) => {
    const over = admission.checkConnection(req);
    if (over) return admission.refuse(req, res, adapterOf.get(req.path) ?? errorShapeFor(req, req.path, routes), over);
    next();
  });
  allowed.add('/healthz', getAndHead);
  allowed.add('/readyz', getAndHead);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req, res) => {
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'shutting_down', activeStreams: active });
  });
  const audience = playgroundAudience(config.playground.enabled, config.host);
  const playground = audience === 'none' ? undefined : playgroundRouter({ maxTelemetrySubscribers: config.playground.maxTelemetrySubscribers, maxRunsPerClient: config.playground.maxRunsPerClient });
  // Served by default only on loopback: by the configured host, and by where each request arrived.
  if (playground && audience === 'everyone') app.use('/playground', playground);
  else if (playground) app.use('/playground', (req, res, next) => (arrivedOnLoopback(req) ? playground(req, res, next) : next()));
  if (config.metrics.enabled) {
    allowed.add(config.metrics.path, getAndHead);
    app.get(config.metrics.path, (_req, res, next) => {
      metrics.registry
        .metrics()
        .then((text) => res.type(metrics.registry.contentType).send(text))
        .catch(next);
    });
  }

  if (config.debug.streams) {
    allowed.add('/debug/streams', getAndHead);
    app.get('/debug/streams', (_req, res) => {
      res.json({ activeStreams: active, streams: metrics.snapshotStreams(), ...(resume === undefined ? {} : { detached: resume.describeDetached() }) });
    });
  }

  if (resumeDeps !== undefined) {
    // A resume holds a stream slot like the stream it continues (its detached stream's, when lent).
    served(['GET'], RESUME_PATH, 'resume');
    app.head(RESUME_PATH, refuseHead(['GET'], (req) => resumeDeps.fallback(req), admission.record));
    app.get(RESUME_PATH, (req: Request, res: Response) => {
      const errorShape = resumeDeps.fallback(req);
      if (!ready) return refuseDraining(req, res, errorShape);
      const slot = admitResume(req, res, String(req.params.streamId), errorShape);
      if (slot === undefined) return;
      track(res, serveResume(req, res, String(req.params.streamId), resumeDeps), slot);
    });
  }

  for (const route of routes) {
    const adapter = adapterOf.get(route.path) as ProviderAdapter;
    // Before the body is read, taking no slot: a client over capacity costs no body bytes (nor,
    // with `Expect: 100-continue`, an upload), and an upload in progress holds no stream slot.
    const checkCapacity = (req: Request, res: Response, next: NextFunction): void => {
      if (!ready) return refuseDraining(req, res, adapter);
      const over = admission.checkStream(req);
      if (over !== undefined) return admission.refuse(req, res, adapter, over);
      next();
    };
    // Once there is nothing left to read: a request that lost its slot meanwhile gets the same refusal.
    const admit = (req: Request, res: Response, next: NextFunction): void => {
      if (!ready) return refuseDraining(req, res, adapter);
      const release = admission.admitStream(req);
      if (release instanceof AdmissionError) return admission.refuse(req, res, adapter, release);
      // Released on the response's close or the stream's end; a shared (resumable) stream takes
      // it over from its first response (see holdSlot).
      res.locals.slot = bindSlot(release, res);
      next();
    };
    const readBody = (req: Request, res: Response, next: NextFunction): void => {
      if (route.provider !== 'passthrough' && !isJsonContentType(req.headers['content-type'])) {
        const message = `the request body must be JSON (Content-Type: application/json), not ${req.headers['content-type']}`;
        return admission.refuse(req, res, adapter, new AdmissionError('ERR_TIDEGATE_UNSUPPORTED_MEDIA_TYPE', message, 415, 'media_type'));
      }
      // A body still arriving when the drain starts is refused then, not read on into the grace.
      let refused = false;
      const refuse = (): void => {
        refused = true;
        refuseDraining(req, res, adapter);
      };
      uploading.add(refuse);
      readRequestBody(req, { maxBytes: config.limits.maxRequestBodyBytes, timeoutMs: config.limits.requestBodyTimeoutMs, onRead: () => continueBody(req, res) }).then(
        (bytes) => {
          uploading.delete(refuse);
          if (refused) return;
          if (route.provider === 'passthrough') req.body = bytes;
          else {
            try {
              req.body = bytes === undefined ? undefined : parseJsonBody(bytes, config.limits.maxRequestBodyValues);
            } catch (err) {
              if (err instanceof AdmissionError) admission.refuse(req, res, adapter, err);
              else adapter.sendHttpError(res, err);
              return;
            }
            // An array or scalar would reach the upstream as an empty POST: refused before it takes a slot.
            if (!isJsonObject(req.body)) return admission.refuse(req, res, adapter, badRequestError('the request body must be a JSON object'));
          }
          next();
        },
        (err: unknown) => {
          uploading.delete(refuse);
          if (refused) return;
          if (err instanceof AdmissionError) admission.refuse(req, res, adapter, err);
          else if (err instanceof RequestBodyAbortedError) res.destroy();
          else next(err);
        },
      );
    };
    const handler = (req: Request, res: Response): void => {
      // A resumable passthrough GET with one of its own event ids is a browser's EventSource coming back.
      const resumeFrom = route.resume !== undefined && req.method === 'GET' ? parseEventId(req.header('last-event-id')) : undefined;
      if (resumeFrom !== undefined && resumeDeps !== undefined) {
        // Taking its detached stream over, the client gives back the slot `admit` took.
        const loan = resumeDeps.service.lendSlot(resumeFrom.streamId);
        const own = res.locals.slot as BoundSlot;
        if (loan === undefined) return track(res, serveResume(req, res, resumeFrom.streamId, resumeDeps, { ownRoute: route.path }), own);
        own.hold()();
        return track(res, serveResume(req, res, resumeFrom.streamId, resumeDeps, { ownRoute: route.path }), bindSlot(loan, res));
      }
      // The router's `next` (with its dispatch state and final handler) would otherwise live as
      // long as the stream; the relay answers every error itself.
      req.next = undefined;
      const slot = res.locals.slot as BoundSlot;
      track(res, relay(req, res, {
        route: route as ResolvedRoute & { url: string },
        adapter,
        logger,
        metrics,
        policy: deps.policies?.[route.path],
        shutdown: shutdown.signal,
        draining: draining.signal,
        register: (abort) => {
          running.add(abort);
          return () => running.delete(abort);
        },
        resume,
        holdSlot: slot.hold,
      }), slot);
    };
    // Express hands HEAD to the GET handlers. A provider route's GET is a whole answer (no body,
    // so no `"stream": true`): its HEAD is that answer without the body. A passthrough GET is a
    // stream, whose HEAD is refused before its GET handler (see refuseHead).
    const head = route.provider === 'passthrough' ? refuseHead(route.methods, () => adapter, admission.record) : undefined;
    served(route.methods, route.path, route.provider, headWithGet(route));
    for (const method of route.methods) {
      if (method === 'POST') app.post(route.path, checkCapacity, readBody, admit, handler);
      else if (head !== undefined) app.head(route.path, head).get(route.path, admit, handler);
      else app.get(route.path, admit, handler);
    }
    // OpenAI's `models.retrieve(model)`: the same route, the model id one segment below it (upstream-url.ts).
    if (route.api === 'models' && route.methods.includes('GET')) {
      served(['GET'], `${route.path}/:model`, route.provider, getAndHead);
      // An id that would name another upstream path is refused here, the upstream never asked.
      const checkModel = (req: Request, res: Response, next: NextFunction): void => {
        const problem = modelIdProblem(String(req.params.model));
        if (problem !== undefined) return admission.refuse(req, res, adapter, badRequestError(problem));
        next();
      };
      app.get(`${route.path}/:model`, checkModel, admit, handler);
    }
    if (route.api === 'responses' && route.resume !== undefined && resumeDeps !== undefined) {
      // OpenAI's retrieve (`responses.retrieve(id, { stream: true, starting_after })`) resumes here,
      // whatever the upstream supports; a streamed one holds a slot as /v1/streams does.
      served(['GET'], `${route.path}${RESPONSES_RETRIEVE_SUFFIX}`, route.provider);
      app.head(`${route.path}${RESPONSES_RETRIEVE_SUFFIX}`, refuseHead(['GET'], () => adapter, admission.record));
      app.get(`${route.path}${RESPONSES_RETRIEVE_SUFFIX}`, (req: Request, res: Response) => {
        if (!ready) return refuseDraining(req, res, adapter);
        const resolved = resumeDeps.service.resolve(String(req.params.responseId)).catch(() => undefined);
        track(
          res,
          (async () => {
            let streamed: boolean;
            try {
              streamed = retrieveQuery(req).stream;
            } catch (err) {
              recordResumeRefusal(resumeDeps, req, res, err, { route: route.path });
              adapter.sendHttpError(res, err);
              return;
            }
            // The slot is taken once the id is resolved; the client may have left by then.
            const slot = streamed ? admitResume(req, res, await resolved, adapter) : undefined;
            if (streamed && slot === undefined) return;
            try {
              await serveResponsesRetrieve(req, res, route.path, resumeDeps, resolved);
            } finally {
              slot?.end();
            }
          })(),
        );
      });
    }
    // What Express refuses on a route (a path parameter that is no percent-encoding) gets the
    // provider's JSON error, not Express' HTML page, and is logged and counted as any refusal.
    app.use(route.path, (err: unknown, req: Request, res: Response, next: NextFunction) => {
      if (res.headersSent) return next(err);
      const status = (err as { status?: number }).status ?? 400;
      admission.refuse(req, res, adapter, new AdmissionError('ERR_TIDEGATE_BAD_REQUEST', (err as Error).message ?? 'bad request', status, 'bad_request'));
    });
  }

  // Anything else: a 405 on a route's path, else a 404 naming the routes, in the path's provider shape.
  app.use(noRouteHandler(routes, endpoints.map((e) => describeEndpoint(e)), allowed, admission.record));

  const control: GatewayControl = {
    metrics,
    routes,
    endpoints,
    admission,
    get activeStreams() {
      return active;
    },
    get flushing() {
      for (const res of unflushed) if (res.writableFinished || res.destroyed) unflushed.delete(res);
      return unflushed.size;
    },
    get ready() {
      return ready;
    },
    async drain(graceMs: number) {
      ready = false;
      // Admitted before the drain and not answered yet: their answers, whatever they are, close
      // the connection as every other answer of the drain does.
      for (const res of live) if (!res.headersSent) res.setHeader('Connection', 'close');
      draining.abort(new ShutdownError());
      playground?.close();
      for (const refuse of [...uploading]) refuse();
      // Detached streams (no reader) are not waited for: nobody would read what they produce.
      const cancelled = resume?.cancelDetached() ?? 0;
      logger.info('draining', { activeStreams: active, graceMs, detachedCancelled: cancelled });
      const allDone = new Promise<void>((resolve) => (active === 0 ? resolve() : idle.push(resolve)));
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace'>((resolve) => (timer = setTimeout(() => resolve('grace'), Math.min(graceMs, MAX_TIMER_MS))));
      const first = await Promise.race([allDone.then(() => 'done' as const), graceOver]);
      clearTimeout(timer);
      if (first === 'grace') {
        const reason = new ShutdownError();
        shutdown.abort(reason);
        for (const abort of [...running]) abort(reason);
        await allDone;
      }
      admission.flushLog();
      await resume?.close();
    },
  };
  return Object.assign(app, { gateway: control });
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Refuses, with a {@link ConfigError}, a route without an upstream URL, two routes answering one
 * method on one path (Express would serve the first, and the second never), and a policy
 * function keyed by a path no route has (a typo there would leave the route unfiltered, silently).
 */
function checkRoutes(routes: readonly ResolvedRoute[], policies: GatewayDeps['policies']): void {
  const missing = routes.find((r) => r.url === undefined);
  if (missing !== undefined) throw new ConfigError(`route ${missing.path}: no upstream URL (set upstream.url or the route's url)`);
  routes.forEach((route, k) => {
    const earlier = routes.slice(0, k).find((r) => r.path === route.path && r.methods.some((m) => route.methods.includes(m)));
    if (earlier === undefined) return;
    const both = route.methods.filter((m) => earlier.methods.includes(m)).join(', ');
    throw new ConfigError(
      `routes: two routes answer ${both} ${route.path} (${earlier.provider} and ${route.provider}); only the first would be served. Keep one: drop the other from routes, or, for a --passthrough on a default route's path, list routes without that default`,
    );
  });
  const unknown = Object.keys(policies ?? {}).filter((path) => !routes.some((r) => r.path === path));
  if (unknown.length > 0) {
    throw new ConfigError(`policies for ${unknown.join(', ')}: no route has ${unknown.length === 1 ? 'that path' : 'those paths'} (routes: ${routes.map((r) => r.path).join(', ')})`);
  }
}
