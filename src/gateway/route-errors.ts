import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { TidegateError } from '../errors';
import { anthropicAdapter } from '../providers/anthropic';
import { openaiAdapter } from '../providers/openai';
import { httpStatusOf, writeJsonError } from '../providers/errors-http';
import type { ProviderAdapter } from '../providers/types';
import { errorBody } from '../express/error-shapes';
import { closeAfterResponse, hasUnreadBody } from './admission';
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

/**
 * The last handler: a JSON 404 naming every endpoint in `served` (as the app mounted them), or a 405 with `Allow` when the path is a
 * route served on other methods, in the shape of {@link errorShapeFor}. A body nobody reads is
 * not drained: the connection closes after the answer.
 */
export function noRouteHandler(routes: readonly ResolvedRoute[], served: readonly string[]): (req: Request, res: Response) => void {
  const list = served.join(', ');
  return (req, res) => {
    if (hasUnreadBody(req)) {
      res.setHeader('Connection', 'close');
      closeAfterResponse(req, res);
    }
    const served = routes.filter((r) => r.path === req.path);
    if (served.length > 0) {
      const allow = [...new Set(served.flatMap((r) => r.methods))];
      res.setHeader('Allow', allow.join(', '));
      adapterFor(served[0]).sendHttpError(res, new NoRouteError(405, `${req.method} is not served on ${req.path}; use ${allow.join(' or ')}`));
      return;
    }
    // The routes that are off by default say how to turn them on.
    const hint = req.path === '/debug/streams' ? ' (GET /debug/streams is served with debug.streams: true, or the --debug-streams flag)' : resumeOffHint(req, routes);
    errorShapeFor(req, req.path, routes).sendHttpError(res, new NoRouteError(404, `no route for ${req.method} ${req.path}; routes: ${list}${hint}`));
  };
}

/**
 * Answers `HEAD` on a path that relays or replays a stream with 405 and `Allow: <allow>`, in the
 * shape `shapeOf(req)` gives. Express hands `HEAD` to a `GET` handler, and Node drops every byte
 * written to a `HEAD` response: the relay would read its upstream at full speed with no reader to
 * push back, for a client that wanted headers only. The gateway cannot know the upstream's head
 * without opening the stream, so it does not pretend to.
 */
export function refuseHead(allow: readonly string[], shapeOf: (req: Request) => Pick<ProviderAdapter, 'sendHttpError'>): (req: Request, res: Response) => void {
  const list = allow.join(', ');
  return (req, res) => {
    res.setHeader('Allow', list);
    shapeOf(req).sendHttpError(res, new NoRouteError(405, `HEAD is not served on ${req.path}; use ${allow.join(' or ')}`));
  };
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
