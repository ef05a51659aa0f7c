import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import fetch, { type Response } from 'node-fetch';
import type { Flow } from '../flow/flow';
import { fromReadable } from '../flow/sources/readable';
import { UpstreamHttpError, UpstreamResetError } from './errors';

/** Keep-alive agents used only for upstream calls, separate from any other HTTP use. */
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: Infinity }),
  https: new https.Agent({ keepAlive: true, maxSockets: Infinity }),
};

/** Picks the keep-alive agent for a URL. */
export function upstreamAgent(url: URL): http.Agent {
  return url.protocol === 'https:' ? agents.https : agents.http;
}

/** One upstream call. */
export interface UpstreamRequest {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Aborting it aborts the HTTP request and closes the upstream socket. */
  signal?: AbortSignal;
}

/** An upstream that answered 200 with an event stream, body not yet read. */
export interface UpstreamStream {
  response: Response;
  /** The body as bytes with demand: the socket is read only while it is requested; cancel aborts the request. */
  body: Flow<Buffer>;
}

/**
 * Sends `request` through node-fetch (keep-alive agent, `Accept-Encoding: identity`, since a
 * compressed SSE body delays or breaks streaming) and resolves once the upstream answered.
 *
 * Errors: {@link UpstreamHttpError} for a non-2xx status or a non-`text/event-stream` body
 * (status and body text kept for pass-through); {@link UpstreamResetError} when the connection
 * fails; the signal's abort reason when aborted.
 */
export async function openUpstreamStream(request: UpstreamRequest): Promise<UpstreamStream> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(request.signal?.reason);
  if (request.signal?.aborted) onAbort();
  request.signal?.addEventListener('abort', onAbort, { once: true });
  const url = new URL(request.url);
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method ?? 'POST',
      headers: { accept: 'text/event-stream', 'accept-encoding': 'identity', ...request.headers },
      body: request.body,
      agent: upstreamAgent(url),
      compress: false,
      signal: controller.signal as never,
    });
  } catch (err) {
    request.signal?.removeEventListener('abort', onAbort);
    if (controller.signal.aborted) throw request.signal?.reason ?? err;
    throw new UpstreamResetError(`upstream request failed: ${(err as Error).message}`, { cause: err });
  }
  const contentType = response.headers.get('content-type') ?? undefined;
  if (!response.ok || !contentType?.startsWith('text/event-stream')) {
    const body = await response.text().catch(() => '');
    request.signal?.removeEventListener('abort', onAbort);
    throw new UpstreamHttpError(response.ok ? 502 : response.status, body, contentType, retryAfterMs(response.headers.get('retry-after')));
  }
  const release = (): void => {
    request.signal?.removeEventListener('abort', onAbort);
    controller.abort();
  };
  const body = fromReadable<Buffer>(response.body as unknown as Readable, { onCancel: release });
  return { response, body };
}

/** Parses `Retry-After` (seconds or an HTTP date) into ms; `undefined` when absent or invalid. */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
