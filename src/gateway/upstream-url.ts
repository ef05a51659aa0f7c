import type { Request } from 'express';
import type { ResolvedRoute } from './config';

/**
 * The URL a request is relayed to. OpenAI and Anthropic routes: the route's `url` as configured.
 * Passthrough routes: the route's `url` plus the client's query parameters whose names the
 * configured URL does not set. A configured parameter wins: a client value for it is dropped,
 * never appended as a second value (`?model=a` configured, `?model=b&x=1` from the client →
 * `?model=a&x=1`). Parameter names compare exactly, as `URLSearchParams` does.
 *
 * @param route the resolved route (`url` set).
 * @param req the client request; only `originalUrl` is read.
 * @returns an absolute URL string.
 */
export function upstreamUrl(route: Pick<ResolvedRoute, 'provider'> & { url: string }, req: Pick<Request, 'originalUrl'>): string {
  if (route.provider !== 'passthrough') return route.url;
  const q = req.originalUrl.indexOf('?');
  if (q < 0) return route.url;
  return mergeQuery(route.url, req.originalUrl.slice(q + 1));
}

/**
 * `base` with the parameters of `clientQuery` (without its `?`) appended, except those whose
 * name `base` already carries: configured keys keep their configured values (all of them, in
 * order); a client key new to `base` keeps all its client values, in order.
 */
export function mergeQuery(base: string, clientQuery: string): string {
  const url = new URL(base);
  const configured = new Set(url.searchParams.keys());
  let added = false;
  for (const [k, v] of new URLSearchParams(clientQuery)) {
    if (configured.has(k)) continue;
    url.searchParams.append(k, v);
    added = true;
  }
  return added ? url.toString() : base;
}
