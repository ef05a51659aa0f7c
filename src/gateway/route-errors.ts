import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { TidegateError } from '../errors';
import { anthropicAdapter } from '../providers/anthropic';
import { openaiAdapter } from '../providers/openai';
import { httpStatusOf, writeJsonError } from '../providers/errors-http';
import type { ProviderAdapter } from '../providers/types';
import { errorBody } from '../express/error-shapes';
import { closeAfterResponse, hasUnreadBody, type RecordRefusal } from './admission';
import type { ResolvedRoute } from './config';
import { adapterFor } from './route-adapters';

/** What writes an error answer before any stream started. */
export type ErrorShape = Pick<ProviderAdapter, 'sendHttpError'>;

/** tidegate's own shape, `{ error: { code, message } }`, for paths that belong to no provider. */
export const PLAIN_ERRORS: ErrorShape = {
  sendHttpError(res: ServerResponse, error: unknown) {
    writeJsonError(res, httpStatusOf(error), { error: errorBody(error) });
  },
};

/** A request that matches no route (404) or not by its method (405, `Allow` set). */
export class NoRouteError extends TidegateError {
  constructor(
    readonly status: 404 | 405,
    message: string,
  ) {
    super(status === 404 ? 'ERR_TIDEGATE_NOT_FOUND' : 'ERR_TIDEGATE_METHOD_NOT_ALLOWED', message);
  }
}

/**
 * A request the gateway cannot forward as it is (`ERR_TIDEGATE_BAD_REQUEST`, HTTP 400): e.g. a
 * JSON body nested too deeply to be written out again for the upstream.
 */
export class BadRequestError extends TidegateError {
  readonly status = 400;

  constructor(message: string) {
    super('ERR_TIDEGATE_BAD_REQUEST', message);
  }
}

/**
 * The error shape a request gets when its path is no route: Anthropic's when it carries
 * `anthropic-version` (every Anthropic SDK request does) or its path lies under an Anthropic
 * route; OpenAI's (a superset of tidegate's `{code, message}`) under an OpenAI route or `/v1/`;
 * tidegate's own otherwise. So each SDK can read the error it gets.
 */
export function errorShapeFor(req: IncomingMessage, path: string, routes: readonly ResolvedRoute[]): ErrorShape {
  if (req.headers['anthropic-version'] !== undefined) return anthropicAdapter;
  let best: ResolvedRoute | undefined;
  let bestLength = 0;
  for (const r of routes) {
    const shared = sharedSegments(r.path, path);
    if (shared > bestLength) [best, bestLength] = [r, shared];
  }
  if (best !== undefined && bestLength >= 2) return adapterFor(best);
  return path.startsWith('/v1/') ? openaiAdapter : PLAIN_ERRORS;
}

/** The number of leading path segments `a` and `b` share (`/v1/messages` and `/v1/messages/x`: 2). */
function sharedSegments(a: string, b: string): number {
  const x = a.split('/').filter(Boolean);
  const y = b.split('/').filter(Boolean);
  let n = 0;
  while (n < x.length && n < y.length && x[n] === y[n]) n++;
  return n;
}

/** The order methods are listed in `Allow`; any other after these, as recorded. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST'];

/**
 * The methods each mounted path answers, `HEAD` included only where it is answered (not where
 * {@link refuseHead} refuses it): what a 405 on that path lists in `Allow`.
 */
export class AllowedMethods {
  private readonly paths: { pattern: RegExp; methods: Set<string> }[] = [];

  /**
   * Records that `path` (Express syntax: `:name` matches one segment) answers `methods`; a path
   * recorded again gets the union. Matched as Express routes match by default: case aside, one
   * trailing slash allowed.
   */
  add(path: string, methods: readonly string[]): void {
    const source = `^${path
      .split(/(:\w+)/)
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')))
      .join('')}/?$`;
    let entry = this.paths.find((p) => p.pattern.source === source);
    if (entry === undefined) this.paths.push((entry = { pattern: new RegExp(source, 'i'), methods: new Set() }));
    for (const m of methods) entry.methods.add(m);
  }

  /** The methods every recorded path matching `path` answers (GET, HEAD, POST first); `undefined` when none matches. */
  of(path: string): string[] | undefined {
    const methods = new Set<string>();
    for (const p of this.paths) if (p.pattern.test(path)) for (const m of p.methods) methods.add(m);
    if (methods.size === 0) return undefined;
    const rank = (m: string): number => (METHOD_ORDER.includes(m) ? METHOD_ORDER.indexOf(m) : METHOD_ORDER.length);
    return [...methods].sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * The last handler: a JSON 404 naming every endpoint in `served` (as the app mounted them), or a
 * 405 when the path is served on other methods, its `Allow` what `allowed` recorded for it (by
 * default the routes' own methods, and `HEAD` on a provider route's `GET`), in the route's
 * shape, else that of {@link errorShapeFor}. A body nobody reads is not drained: the connection
 * closes after the answer. A 405 is a refusal for what the request asks: `refused` counts and
 * logs it (reason `method`).
 */
export function noRouteHandler(
  routes: readonly ResolvedRoute[],
  served: readonly string[],
  allowed: AllowedMethods = routeMethods(routes),
  refused?: RecordRefusal | undefined,
): (req: Request, res: Response) => void {
  const list = served.join(', ');
  return (req, res) => {
    if (hasUnreadBody(req)) {
      res.setHeader('Connection', 'close');
      closeAfterResponse(req, res);
    }
    const allow = allowed.of(req.path);
    if (allow !== undefined) {
      res.setHeader('Allow', allow.join(', '));
      const own = routes.find((r) => r.path === req.path);
      const shape = own === undefined ? errorShapeFor(req, req.path, routes) : adapterFor(own);
      refuseMethod(req, res, shape, new NoRouteError(405, `${req.method} is not served on ${req.path}; use ${allow.join(' or ')}`), refused);
      return;
    }
    // The routes that are off by default say how to turn them on.
    const hint =
      req.path === '/debug/streams'
        ? ' (GET /debug/streams is served with debug.streams: true, or the --debug-streams flag)'
        : /^\/playground\/?$/i.test(req.path)
          ? ' (/playground is served by default only when host is a loopback address; on any host with playground.enabled: true, or the --playground flag)'
          : resumeOffHint(req, routes);
    errorShapeFor(req, req.path, routes).sendHttpError(res, new NoRouteError(404, `no route for ${req.method} ${req.path}; routes: ${list}${hint}`));
  };
}

/**
 * The methods `routes` answer on their own paths: theirs, and `HEAD` where a provider route
 * answers `GET` (a whole answer, see {@link refuseHead}; a passthrough `GET` streams).
 */
export function routeMethods(routes: readonly ResolvedRoute[]): AllowedMethods {
  const allowed = new AllowedMethods();
  for (const r of routes) allowed.add(r.path, headWithGet(r));
  return allowed;
}

/** A route's methods, with `HEAD` after `GET` when its `GET` answers whole (not passthrough). */
export function headWithGet(route: Pick<ResolvedRoute, 'methods' | 'provider'>): string[] {
  return route.provider !== 'passthrough' && route.methods.includes('GET') ? [...route.methods, 'HEAD'] : [...route.methods];
}

/**
 * Answers `HEAD` on a path that relays or replays a stream with 405 and `Allow: <allow>`, in the
 * shape `shapeOf(req)` gives. Express hands `HEAD` to a `GET` handler, and Node drops every byte
 * written to a `HEAD` response: the relay would read its upstream at full speed with no reader to
 * push back, for a client that wanted headers only. The gateway cannot know the upstream's head
 * without opening the stream, so it does not pretend to. `refused` counts and logs the 405 as
 * any refusal (reason `method`).
 */
export function refuseHead(allow: readonly string[], shapeOf: (req: Request) => Pick<ProviderAdapter, 'sendHttpError'>, refused?: RecordRefusal | undefined): (req: Request, res: Response) => void {
  const list = allow.join(', ');
  return (req, res) => {
    res.setHeader('Allow', list);
    refuseMethod(req, res, shapeOf(req), new NoRouteError(405, `HEAD is not served on ${req.path}; use ${allow.join(' or ')}`), refused);
  };
}

/** Answers a 405 in `shape`, counted and logged by `refused` (reason `method`). */
function refuseMethod(req: Request, res: Response, shape: Pick<ProviderAdapter, 'sendHttpError'>, error: NoRouteError, refused: RecordRefusal | undefined): void {
  refused?.(req, error.status, { code: error.code, reason: 'method' });
  shape.sendHttpError(res, error);
}

/**
 * Why `GET /v1/streams/{id}` or `GET /v1/responses/{id}` found no route: no route has `resume`
 * on (for a Responses retrieve: no Responses route has it on). Empty for any other request.
 */
function resumeOffHint(req: Request, routes: readonly ResolvedRoute[]): string {
  if (req.method !== 'GET') return '';
  if (/^\/v1\/streams\/[^/]+$/.test(req.path) && !routes.some((r) => r.resume !== undefined)) {
    return '; resume is off: set `resume: true` on a route to retrieve its streams';
  }
  if (/\/v1\/responses\/[^/]+$/.test(req.path) && !routes.some((r) => r.api === 'responses' && r.resume !== undefined)) {
    return '; resume is off: set `resume: true` on the /v1/responses route to retrieve responses';
  }
  return '';
}

/** A JSON route's request body type: absent, or JSON (`application/json`, `…+json`). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType === '') return true;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}
