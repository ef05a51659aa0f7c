import type { Response } from 'node-fetch';
import type { Flow } from '../flow/flow';
import { is3xx, unfollowedRedirect, UpstreamCall, type CallRequest, type UpstreamRequest } from './call';
import { DEFAULT_MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES, UpstreamHttpError, UpstreamNotStreamError, UpstreamRedirectError } from './errors';
import { isMediaType } from './media-type';
import { retryAfterMs } from './retry';

export { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_FIRST_BYTE_TIMEOUT_MS } from './call';
export type { UpstreamRequest } from './call';
export { UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MAX_READ_BYTES, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES, upstreamAgent } from './node-hooks';
export { retryAfterMs } from './retry';


/**
 * An upstream that answered 200 with an event stream, body not yet read. The call (its listener
 * on the caller's signal, its timers, its socket) is held until the body ends, errors or is
 * cancelled: a caller that does not read the body cancels it (subscribe and cancel) or aborts
 * the signal, as with an unread fetch body.
 */
export interface UpstreamStream {
  response: Response;
  /**
   * The body as bytes with demand: the socket is read only while it is requested; cancel aborts
   * the request. Errors: the timeouts above ({@link TimeoutError}), the signal's reason,
   * {@link UpstreamResetError} when the connection breaks.
   */
  body: Flow<Buffer>;
  /**
   * Bytes read from the upstream socket into userland that the body's subscriber has not received
   * yet: the socket's and the response's readable buffers (and node-fetch's body stream, when
   * compressed), plus chunks parked by the body source. Excludes the kernel's socket buffer. 0 once
   * the body ended or was cancelled. Cheap (a few property reads): call it as often as needed,
   * e.g. from `ByteBudget#attachExternal`.
   */
  bufferedBytes(): number;
  /**
   * True while the request's `readBytes` bounds what enters userland: plain HTTP and an identity
   * body (a compressed body grows as zlib inflates it, a TLS socket reads as Node does).
   */
  readsSized(): boolean;
}

/** A whole (non-stream) upstream response. */
export interface UpstreamBody {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

/**
 * Sends `request` through node-fetch (keep-alive agent, `Accept-Encoding: identity`, since a
 * compressed SSE body delays or breaks streaming) and resolves once the upstream answered. A body
 * compressed anyway is decoded when its one coding is gzip or deflate (any case).
 *
 * Errors: {@link UpstreamHttpError} for a 4xx or 5xx status (status and body text, at most
 * {@link MAX_ERROR_BODY_BYTES}, kept for pass-through; '' when in a coding not decoded);
 * {@link UpstreamRedirectError} for any 3xx not followed (see `followRedirects`);
 * {@link UpstreamEncodingError} for a 2xx in any other coding (the body is not read, the request
 * is aborted); {@link UpstreamNotStreamError} for a 2xx
 * whose body is not `text/event-stream` (the body is not read, the request is aborted);
 * {@link UpstreamBodyTooLargeError} for a longer error body; {@link UpstreamResetError} when the
 * connection fails; `TimeoutError` (`connect`, `first`); the signal's abort reason when aborted.
 */
export async function openUpstreamStream(request: UpstreamRequest): Promise<UpstreamStream> {
  const call = new UpstreamCall(request);
  const response = await call.send({ accept: 'text/event-stream' });
  refuseRedirect(call, response);
  const contentType = response.headers.get('content-type') ?? undefined;
  if (response.ok && !isMediaType(contentType, 'text/event-stream')) {
    call.release();
    throw new UpstreamNotStreamError(response.status, contentType, request.route);
  }
  if (!response.ok) {
    const body = await call.errorBody(response).finally(() => call.release());
    throw upstreamHttpError(response, body, contentType);
  }
  const body = call.streamBody(response);
  return { response, body, bufferedBytes: () => call.bufferedBytes(), readsSized: () => call.readsSized() };
}

/** The error for a 4xx or 5xx answer: its status, body text, `Retry-After`, and a 405's `Allow`. */
function upstreamHttpError(response: Response, body: string, contentType: string | undefined): UpstreamHttpError {
  const allow = response.status === 405 ? (response.headers.get('allow') ?? undefined) : undefined;
  return new UpstreamHttpError(response.status, body, contentType, retryAfterMs(response.headers.get('retry-after')), allow);
}

/**
 * A 3xx final answer ends the call with {@link UpstreamRedirectError}, its body unread: one the
 * call refused to follow (too many, another origin: see `followRedirects`), a redirect it was not
 * told to follow, or a 3xx nothing can follow (300, 304, 305, a redirect without `Location`).
 */
function refuseRedirect(call: UpstreamCall, response: Response): void {
  const { status } = response;
  if (!is3xx(status)) return;
  call.release();
  if (call.refusedRedirect !== undefined) throw call.refusedRedirect;
  // A call that follows redirects resolves with a 3xx only when node-fetch could not follow it.
  throw unfollowedRedirect(status, call.request.route, call.request.followRedirects);
}

/**
 * Sends `request` and reads the whole answer (the non-stream routes). Same agent, headers and
 * timeouts as {@link openUpstreamStream}; the first-byte deadline covers the status line. The
 * body is read incrementally up to `maxBodyBytes` (an error body up to 64 KiB).
 *
 * Errors: {@link UpstreamHttpError} for a 4xx or 5xx status (body kept for pass-through),
 * {@link UpstreamRedirectError} for any 3xx not followed (see `followRedirects`),
 * {@link UpstreamEncodingError} for a 2xx in a coding not decoded (as {@link openUpstreamStream}),
 * {@link UpstreamBodyTooLargeError} for a longer body (the request aborted, its socket
 * destroyed), {@link UpstreamResetError} (with the answered `status` when the body broke),
 * `TimeoutError`, the signal's reason.
 */
export async function fetchUpstream(request: UpstreamRequest): Promise<UpstreamBody> {
  const call = new UpstreamCall(request);
  const response = await call.send({ accept: 'application/json' });
  refuseRedirect(call, response);
  call.firstByte();
  const contentType = response.headers.get('content-type') ?? undefined;
  try {
    // An error answer's body as a stream's is read: '' when it breaks, as the status is the answer.
    if (!response.ok) throw upstreamHttpError(response, await call.errorBody(response), contentType);
    const body = await call.readBody(response, request.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    call.release(false);
    return { status: response.status, contentType, body };
  } catch (err) {
    const mapped = call.mapError(err);
    call.release();
    throw mapped;
  }
}

/**
 * An upstream that answered, whatever its status, its body not read yet: for a caller that maps
 * statuses itself (the SSE client: 204 stops, 429 and 5xx retry). Like {@link UpstreamStream},
 * the call is held until the body ends, errors or is cancelled, or {@link release} is called.
 */
export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** The body as bytes with demand, as {@link UpstreamStream.body}. Subscribe once. */
  body(): Flow<Buffer>;
  /** The first `maxBytes` of the body as UTF-8 text ('' if it breaks); the call is released after. */
  text(maxBytes: number): Promise<string>;
  /** Releases the call without reading the body: aborts the request. Idempotent. */
  release(): void;
  /** As {@link UpstreamStream.bufferedBytes}. */
  bufferedBytes(): number;
}

/**
 * @internal Sends `request` (through `request.agent` when given) and resolves once the upstream
 * answered with any status, with the same agent, headers, timeouts and sized reads as
 * {@link openUpstreamStream}.
 *
 * Errors: {@link UpstreamResetError} when the connection fails, `TimeoutError` (`connect`,
 * `first`), {@link UpstreamRedirectError} for a redirect `followRedirects` refused to follow
 * (too many, another origin), {@link UpstreamEncodingError} for a 2xx in a coding not decoded,
 * the signal's abort reason when aborted.
 */
export async function sendUpstream(request: CallRequest): Promise<UpstreamAnswer> {
  // A 3xx not followed is an answer like any other: the caller maps it. One the call refused to
  // follow is not: what it would have led to is unknown.
  const call = new UpstreamCall(request);
  const response: Response = await call.send({});
  if (call.refusedRedirect !== undefined) {
    call.release();
    throw call.refusedRedirect;
  }
  return {
    status: response.status,
    headers: response.headers,
    body: () => call.streamBody(response),
    text: (maxBytes) => call.headText(response, maxBytes),
    release: () => call.release(),
    bufferedBytes: () => call.bufferedBytes(),
  };
}
