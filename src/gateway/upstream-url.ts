import type { Request } from 'express';
import type { ResolvedRoute } from './config';
import { BadRequestError } from './route-errors';

/**
 * The URL a request is relayed to. OpenAI and Anthropic routes: the route's `url` as configured;
 * a model's own path below a `models` route (`GET /v1/models/{model}`, `req.params.model`) adds
 * the model id to it as one path segment ({@link modelUrl}). Passthrough routes: the route's
 * `url` plus the client's query parameters whose names the configured URL does not set. A
 * configured parameter wins: a client value for it is dropped, never appended as a second value
 * (`?model=a` configured, `?model=b&x=1` from the client → `?model=a&x=1`). Parameter names
 * compare case-insensitively: many servers (ASP.NET's among them) read `API-VERSION` or `KEY` as
 * the configured `api-version` or `key`, so a client spelling must not add a second value.
 *
 * @param route the resolved route (`url` set).
 * @param req the client request; only `originalUrl` and `params.model` are read.
 * @returns an absolute URL string.
 * @throws BadRequestError (400) for a model id that {@link modelUrl} refuses.
 */
export function upstreamUrl(route: Pick<ResolvedRoute, 'provider' | 'api'> & { url: string }, req: Pick<Request, 'originalUrl'> & Partial<Pick<Request, 'params'>>): string {
  const model = route.api === 'models' ? req.params?.model : undefined;
  if (typeof model === 'string') return modelUrl(route.url, model);
  if (route.provider !== 'passthrough') return route.url;
  const q = req.originalUrl.indexOf('?');
  if (q < 0) return route.url;
  return mergeQuery(route.url, req.originalUrl.slice(q + 1));
}

/**
 * `base` with the parameters of `clientQuery` (without its `?`) appended, except those whose
 * name `base` already carries, case aside: configured keys keep their configured values (all of
 * them, in order); a client key new to `base` keeps all its client values, in order.
 */
export function mergeQuery(base: string, clientQuery: string): string {
  const url = new URL(base);
  const configured = new Set([...url.searchParams.keys()].map((k) => k.toLowerCase()));
  let added = false;
  for (const [k, v] of new URLSearchParams(clientQuery)) {
    if (configured.has(k.toLowerCase())) continue;
    url.searchParams.append(k, v);
    added = true;
  }
  return added ? url.toString() : base;
}

/**
 * `base` (a models route's URL, e.g. `http://vllm:8000/v1/models`) with `model` as one more path
 * segment, percent-encoded (`org/model` → `…/v1/models/org%2Fmodel`); its query stays.
 *
 * Refused: an empty id; an id with a `.` or `..` segment once split on `/` (`..`,
 * `/../admin`, `org/./m`); an id holding `\` or a control character. Sent encoded, such an id
 * still names another path to an upstream, or a proxy before it, that decodes `%2F` (or treats
 * `\` as `/`) and then normalises the path, and the request would carry the gateway's key there.
 * Ids in use (`gpt-4o`, `meta-llama/Llama-3.1-8B-Instruct`, `ft:gpt-4o:org:custom:id`,
 * `models/gemini-1.5`) pass.
 *
 * @throws BadRequestError (400, `ERR_TIDEGATE_BAD_REQUEST`).
 */
export function modelUrl(base: string, model: string): string {
  const problem = modelIdProblem(model);
  if (problem !== undefined) throw new BadRequestError(problem);
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${encodeURIComponent(model)}`;
  return url.toString();
}

// C0 controls, DEL and C1 controls.
const UNSAFE_CHAR = /[\\\u0000-\u001f\u007f-\u009f]/;

/**
 * Why {@link modelUrl} refuses `model` (`not a model id: ".."`), or `undefined` for an id it
 * takes. The gateway checks it before a request takes a stream slot.
 */
export function modelIdProblem(model: string): string | undefined {
  const safe = model !== '' && !UNSAFE_CHAR.test(model) && !model.split('/').some((segment) => segment === '.' || segment === '..');
  return safe ? undefined : `not a model id: ${JSON.stringify(model)}`;
}
