import type { Request } from 'express';
import type { UpstreamRequest } from '../../http/request';
import type { ProviderAdapter } from '../../providers/types';
import { API_SPECS, type ResolvedRoute } from '../config';
import { jsonBodyBytes } from '../request-body';
import { BadRequestError } from '../route-errors';
import { upstreamUrl } from '../upstream-url';
import type { AbortSignalLike } from '../../http/abort-signal-like';

/** Hop-by-hop headers (RFC 9110 §7.6.1) and ones the gateway sets itself: never forwarded. */
const NEVER_FORWARD = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'accept-encoding']);

/** What the client asked for, read once from its request. */
export interface ClientAsk {
  /** The client asked for a stream (`"stream": true`; every passthrough request). */
  wantsStream: boolean;
  /** The route streams it (a non-stream route answers a stream request with one whole answer). */
  streaming: boolean;
}

/** Reads whether the client asked for a stream and whether the route will stream it. */
export function clientAsk(req: Request, route: ResolvedRoute): ClientAsk {
  const json = jsonBody(req, route);
  const wantsStream = route.provider === 'passthrough' || (API_SPECS[route.api].streams && json?.stream === true);
  return { wantsStream, streaming: wantsStream && (route.stream || route.provider === 'passthrough') };
}

/**
 * The upstream call for one client request: the route's URL (a passthrough route adds the
 * client's query), the forwarded and configured headers, the body (the bytes the client sent;
 * re-serialized JSON only where the route rewrites it, a stream asked of a route that does not
 * stream), the route's timeouts and `signal`.
 */
export function upstreamRequest(req: Request, route: ResolvedRoute & { url: string }, adapter: ProviderAdapter, ask: ClientAsk, signal: AbortSignalLike): UpstreamRequest {
  const json = jsonBody(req, route);
  let body: string | Buffer | undefined;
  if (json !== undefined) {
    const rewrite = ask.wantsStream && !ask.streaming ? adapter.nonStreamBody : undefined;
    body = rewrite !== undefined ? serialize(rewrite.call(adapter, json)) : (jsonBodyBytes(json) ?? serialize(json));
  } else if (Buffer.isBuffer(req.body) && req.body.length > 0) body = req.body;
  // A HEAD is asked as its GET: the client gets that answer's status and headers.
  const post = req.method === 'POST';
  return {
    url: upstreamUrl(route, req),
    method: post ? 'POST' : 'GET',
    headers: upstreamHeaders(req, route, adapter),
    body: post ? body : undefined,
    signal,
    connectTimeoutMs: route.timeouts.connectMs,
    firstByteTimeoutMs: route.timeouts.firstByteMs,
    idleTimeoutMs: route.timeouts.idleMs,
    // A stream's relay times its events (relay/event-idle.ts), not the body's chunks.
    idleTimedByEvents: ask.streaming,
    maxBodyBytes: route.maxBodyBytes,
    route: route.path,
    // Never off the configured origin: node-fetch keeps `x-api-key` and `api-key` on a redirect to another host.
    followRedirects: route.followRedirects ? 'same-origin' : false,
  };
}

/**
 * The JSON body for the upstream. `JSON.parse` reads nesting of any depth, `JSON.stringify`
 * recurses and overflows the stack on a few thousand levels: such a body is the client's error.
 */
function serialize(json: Record<string, unknown>): string {
  try {
    return JSON.stringify(json);
  } catch (err) {
    if (err instanceof RangeError) throw new BadRequestError('the request body is nested too deeply to be forwarded');
    throw err;
  }
}

/** Headers without `last-event-id` (connectSse sends its own, updated on each reconnect). */
export function withoutLastEventId(h: Record<string, string>): Record<string, string> {
  const { 'last-event-id': _omit, ...rest } = h;
  return rest;
}

function jsonBody(req: Request, route: ResolvedRoute): Record<string, unknown> | undefined {
  const body = req.body as unknown;
  return route.provider !== 'passthrough' && isObject(body) ? body : undefined;
}

/** Forwarded client headers (allow-list, hop-by-hop never), then static headers, then the configured credential. */
function upstreamHeaders(req: Request, route: ResolvedRoute, adapter: ProviderAdapter): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of route.forwardHeaders ?? adapter.defaultForwardHeaders) {
    if (NEVER_FORWARD.has(name)) continue;
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
    else if (Array.isArray(v)) out[name] = v.join(', ');
  }
  if (route.provider !== 'passthrough' && out['content-type'] === undefined) out['content-type'] = 'application/json';
  if (route.provider === 'anthropic' && out['anthropic-version'] === undefined) out['anthropic-version'] = '2023-06-01';
  Object.assign(out, lowerKeys(route.headers), adapter.authHeaders(route.apiKey));
  return out;
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}
