import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { PLAYGROUND_HTML, PLAYGROUND_JS, PLAYGROUND_CSS } from './assets';
import { PlaygroundRun, type RunLimits } from './run';
import { PLAYGROUND_LIMITS, scenarioSchema } from './scenario';
import { TelemetryHub } from './telemetry';
import { MAX_WATCHED_RUNS, PageStream } from './watch';

/** Options of {@link playgroundRouter}. Units in the names. */
export interface PlaygroundOptions {
  /** Runs streaming at once, across all visitors (default 8; compare mode uses 2). Beyond it `POST /runs` answers 429. */
  maxConcurrentRuns?: number | undefined;
  /** Hard end of a run, ms after its start (default 60000, also the maximum). */
  maxRunMs?: number | undefined;
  /** Where the unbounded-buffer demo is stopped, bytes (default 8 MiB, maximum 64 MiB). */
  unboundedCapBytes?: number | undefined;
  /** Telemetry sampling period, ms (default 100): one timer per run, shared by its subscribers. */
  telemetryIntervalMs?: number | undefined;
  /** Telemetry subscribers of one run at once (default 16). Beyond it `GET /runs/:id/telemetry` answers 429 with `Retry-After`. */
  maxTelemetrySubscribers?: number | undefined;
  /**
   * Runs not yet finished per client address at once (default 4: two tabs in compare mode; the
   * socket's remote address, never a forwarded header). Beyond it `POST /runs` answers 429 with `Retry-After`.
   */
  maxRunsPerClient?: number | undefined;
  /**
   * Telemetry bytes a subscriber may have queued and still be sent the next sample (default
   * 65536); a subscriber over it is skipped, and closed once it has not drained for `stallTimeoutMs`.
   */
  telemetryMaxQueuedBytes?: number | undefined;
  /** The bridge's `stallTimeoutMs` for playground runs (default 10000). */
  stallTimeoutMs?: number | undefined;
  /** A created run that nobody streams is dropped after this long, ms (default 10000). */
  startTimeoutMs?: number | undefined;
  /** A finished run's final telemetry stays readable this long, ms (default 30000). */
  retainMs?: number | undefined;
}

/** The router, plus what its owner needs for shutdown and health. */
export interface PlaygroundRouter extends Router {
  /** Runs waiting, streaming or draining now. */
  readonly activeRuns: number;
  /** Stops every run and forgets them (call on shutdown and in tests). */
  close(): void;
}

const MAX_RETAINED = 64;

/**
 * The live backpressure playground as an Express Router: mount it with
 * `app.use('/playground', playgroundRouter())`.
 *
 * Routes (relative to the mount point):
 * - `GET /` the page; `GET /assets/app.js`, `GET /assets/app.css` its assets (served from memory, no CDN);
 * - `POST /runs` with a scenario JSON (see `scenarioSchema`) → `201 {id, streamUrl, telemetryUrl, scenario}`,
 *   `400` invalid (`error.issues`: `{field, message, minimum?, maximum?}` per field, in the scenario's units), `429` too many runs (in all, or for this client address);
 * - `GET /runs/:id/stream` the run's data: SSE through the demand bridge, read by an emulated client at
 *   the scenario's bytes/s, then relayed to the browser;
 * - `GET /runs/:id/telemetry` SSE `event: sample` every `telemetryIntervalMs`, `event: end` at the end
 *   (one sampler per run shared by its subscribers), `429` beyond `maxTelemetrySubscribers`;
 * - `GET /watch?run=<id>&run=<id>` one page's runs on one SSE response (at most 4): starts those still
 *   waiting, and carries their data and telemetry (see `PageStream`), `404` for an unknown run, `429` when a
 *   run has `maxTelemetrySubscribers`; the page uses only this, so it holds one connection whatever it shows;
 * - `GET /runs/:id` the latest sample as JSON; `DELETE /runs/:id` stops the run.
 *
 * Bounded: `maxConcurrentRuns`, `maxRunsPerClient`, `maxTelemetrySubscribers`, `maxRunMs`, the unbounded-buffer cap, per-scenario limits
 * (`PLAYGROUND_LIMITS`), at most 64 finished runs retained.
 */
export function playgroundRouter(options: PlaygroundOptions = {}): PlaygroundRouter {
  const maxConcurrentRuns = Math.max(1, options.maxConcurrentRuns ?? 8);
  const limits: RunLimits = {
    maxRunMs: clamp(options.maxRunMs ?? 60_000, 1_000, PLAYGROUND_LIMITS.maxDurationSec * 1000),
    unboundedCapBytes: clamp(options.unboundedCapBytes ?? 8 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024),
    stallTimeoutMs: Math.max(0, options.stallTimeoutMs ?? 10_000),
    drainDeadlineMs: 10_000,
  };
  const telemetryIntervalMs = clamp(options.telemetryIntervalMs ?? 100, 20, 5_000);
  const maxTelemetrySubscribers = Math.max(1, options.maxTelemetrySubscribers ?? 16);
  const maxRunsPerClient = Math.max(1, options.maxRunsPerClient ?? 4);
  const telemetryMaxQueuedBytes = Math.max(16 * 1024, options.telemetryMaxQueuedBytes ?? 64 * 1024);
  const hubs = new Map<string, TelemetryHub>();
  /** The client address of each run not yet finished. */
  const owners = new Map<string, string>();
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const retainMs = options.retainMs ?? 30_000;
  const runs = new Map<string, PlaygroundRun>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const later = (ms: number, fn: () => void): void => {
    if (closed) return;
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const active = (): number => {
    let n = 0;
    for (const r of runs.values()) if (r.state !== 'finished') n++;
    return n;
  };
  const forgetOldFinished = (): void => {
    for (const [id, r] of runs) {
      if (runs.size <= MAX_RETAINED) return;
      if (r.state === 'finished') runs.delete(id);
    }
  };

  const router = Router() as PlaygroundRouter;

  router.get('/', (req: Request, res: Response) => {
    const base = escapeHtml(req.baseUrl);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
    );
    res.end(PLAYGROUND_HTML.replaceAll('__BASE__', base));
  });
  router.get('/assets/app.js', (_req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.end(PLAYGROUND_JS);
  });
  router.get('/assets/app.css', (_req, res) => {
    res.setHeader('Content-Type', 'text/css; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.end(PLAYGROUND_CSS);
  });

  // A body the JSON parser refuses (malformed, a scalar, over 4 KiB) gets a JSON error, never
  // Express' HTML page (which carries a stack trace outside production).
  const parseScenario = (req: Request, res: Response, next: NextFunction): void => {
    express.json({ limit: '4kb' })(req, res, (err?: unknown) => {
      if (err === undefined) return next();
      const status = (err as { status?: number }).status ?? 400;
      res.status(status >= 400 && status < 500 ? status : 400).json({
        error: { code: 'ERR_TIDEGATE_PLAYGROUND_SCENARIO', message: `request body: ${(err as Error).message ?? 'invalid JSON'}` },
      });
    });
  };
  router.post('/runs', parseScenario, (req: Request, res: Response) => {
    if (closed) return void res.status(503).json({ error: { code: 'ERR_TIDEGATE_SHUTDOWN', message: 'playground closed' } });
    const parsed = scenarioSchema.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({
        field: i.path.join('.') || 'body',
        message: i.message,
        ...('minimum' in i ? { minimum: Number(i.minimum) } : {}),
        ...('maximum' in i ? { maximum: Number(i.maximum) } : {}),
      }));
      const message = issues.map((i) => `${i.field}: ${i.message}`).join('; ');
      return void res.status(400).json({ error: { code: 'ERR_TIDEGATE_PLAYGROUND_SCENARIO', message, issues } });
    }
    if (active() >= maxConcurrentRuns) return void busy(res, `at most ${maxConcurrentRuns} playground runs at once; try again shortly`);
    const client = req.socket.remoteAddress ?? '';
    let mine = 0;
    for (const owner of owners.values()) if (owner === client) mine++;
    if (mine >= maxRunsPerClient) return void busy(res, `at most ${maxRunsPerClient} playground runs per client at once; stop or finish one first`);
    const run = new PlaygroundRun(parsed.data, limits);
    runs.set(run.id, run);
    owners.set(run.id, client);
    run.onFinished(() => owners.delete(run.id));
    forgetOldFinished();
    later(startTimeoutMs, () => {
      if (run.state === 'waiting') run.stop('never-started');
    });
    run.onFinished(() =>
      later(retainMs, () => {
        runs.delete(run.id);
        hubs.get(run.id)?.close();
        hubs.delete(run.id);
      }),
    );
    const base = `${req.baseUrl}/runs/${run.id}`;
    res.status(201).json({ id: run.id, streamUrl: `${base}/stream`, telemetryUrl: `${base}/telemetry`, scenario: parsed.data });
  });

  // Express hands HEAD to a GET handler and Node drops a HEAD answer's body: a HEAD on a stream
  // would start the run (or hold a telemetry subscription) for a client that reads nothing.
  const refuseHead = (_req: Request, res: Response): void => {
    res.setHeader('Allow', 'GET');
    res.status(405).json({ error: { code: 'ERR_TIDEGATE_METHOD_NOT_ALLOWED', message: 'HEAD is not served on a playground stream; use GET' } });
  };
  router.head('/runs/:id/stream', refuseHead);
  router.head('/runs/:id/telemetry', refuseHead);
  router.head('/watch', refuseHead);

  router.get('/runs/:id/stream', (req: Request, res: Response) => {
    const run = runs.get(String(req.params.id));
    if (!run) return void notFound(res);
    if (run.state !== 'waiting') {
      return void res.status(409).json({ error: { code: 'ERR_TIDEGATE_PLAYGROUND_STARTED', message: 'this run already streams' } });
    }
    run.start(res);
  });

  const hubFor = (run: PlaygroundRun): TelemetryHub => {
    let hub = hubs.get(run.id);
    if (hub === undefined) {
      hub = new TelemetryHub(run, { intervalMs: telemetryIntervalMs, maxSubscribers: maxTelemetrySubscribers, maxQueuedBytes: telemetryMaxQueuedBytes, stallTimeoutMs: limits.stallTimeoutMs });
      hubs.set(run.id, hub);
    }
    return hub;
  };
  const tooManySubscribers = (res: Response): void =>
    busy(res, `at most ${maxTelemetrySubscribers} telemetry subscribers per run; close another view of this run first`);

  router.get('/runs/:id/telemetry', (req: Request, res: Response) => {
    const run = runs.get(String(req.params.id));
    if (!run) return void notFound(res);
    if (!hubFor(run).subscribe(res)) tooManySubscribers(res);
  });

  router.get('/watch', (req: Request, res: Response) => {
    const ids = [...new Set(new URL(req.originalUrl, 'http://page').searchParams.getAll('run'))];
    if (ids.length === 0 || ids.length > MAX_WATCHED_RUNS) {
      return void res.status(400).json({ error: { code: 'ERR_TIDEGATE_PLAYGROUND_SCENARIO', message: `watch 1 to ${MAX_WATCHED_RUNS} runs: ?run=<id>&run=<id>` } });
    }
    const watched: { run: PlaygroundRun; hub: TelemetryHub }[] = [];
    for (const id of ids) {
      const run = runs.get(id);
      if (!run) return void notFound(res);
      watched.push({ run, hub: hubFor(run) });
    }
    if (watched.some((w) => w.hub.full)) return void tooManySubscribers(res);
    new PageStream(res).carry(watched);
  });

  router.get('/runs/:id', (req: Request, res: Response) => {
    const run = runs.get(String(req.params.id));
    if (!run) return void notFound(res);
    res.setHeader('Cache-Control', 'no-cache');
    res.json(run.sample());
  });

  router.delete('/runs/:id', (req: Request, res: Response) => {
    const run = runs.get(String(req.params.id));
    if (!run) return void notFound(res);
    run.stop();
    res.status(204).end();
  });

  Object.defineProperty(router, 'activeRuns', { get: active, enumerable: true });
  router.close = (): void => {
    closed = true;
    for (const t of timers) clearTimeout(t);
    timers.clear();
    for (const r of runs.values()) r.stop('shutdown');
    runs.clear();
    // Each hub sends its run's final sample and ends as the run finishes.
    hubs.clear();
    owners.clear();
  };
  return router;
}

/** 429 with `Retry-After: 5` and ERR_TIDEGATE_PLAYGROUND_BUSY. */
function busy(res: Response, message: string): void {
  res.setHeader('Retry-After', '5');
  res.status(429).json({ error: { code: 'ERR_TIDEGATE_PLAYGROUND_BUSY', message } });
}

function notFound(res: Response): void {
  res.status(404).json({ error: { code: 'ERR_TIDEGATE_PLAYGROUND_NOT_FOUND', message: 'no such run (finished runs are kept 30 s)' } });
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
