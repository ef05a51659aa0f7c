import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import fetch, { type Response } from 'node-fetch';
import { TidegateError, TimeoutError } from '../errors';
import type { Flow } from '../flow/flow';
import { idleTimeout } from '../flow/operators/idle-timeout';
import { OperatorSubscriber, operator } from '../flow/operators/operator-subscriber';
import { fromReadable } from '../flow/sources/readable';
import type { FlowContext, Subscriber } from '../flow/types';
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

/** Default time to first byte of the upstream body, ms: models think before they speak. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 60_000;
/** Default time to establish the TCP (and TLS) connection, ms. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** One upstream call. Every timeout is in ms; 0 disables it. */
export interface UpstreamRequest {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Aborting it aborts the HTTP request and closes the upstream socket; its reason is what the call rejects or errors with. */
  signal?: AbortSignal;
  /** A new connection must be established within this (default 10000 ms); a reused keep-alive socket is not timed. Signals `TimeoutError('connect')`. */
  connectTimeoutMs?: number;
  /** The first body byte must arrive within this of the call (default 60000 ms). Signals `TimeoutError('first')`. */
  firstByteTimeoutMs?: number;
  /** Longest silence between body chunks while the reader has demand (default 0 = off). Signals `TimeoutError('idle')`. */
  idleTimeoutMs?: number;
}

/** An upstream that answered 200 with an event stream, body not yet read. */
export interface UpstreamStream {
  response: Response;
  /**
   * The body as bytes with demand: the socket is read only while it is requested; cancel aborts
   * the request. Errors: the timeouts above ({@link TimeoutError}), the signal's reason,
   * {@link UpstreamResetError} when the connection breaks.
   */
  body: Flow<Buffer>;
}

/** A whole (non-stream) upstream response. */
export interface UpstreamBody {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

/**
 * Sends `request` through node-fetch (keep-alive agent, `Accept-Encoding: identity`, since a
 * compressed SSE body delays or breaks streaming) and resolves once the upstream answered.
 *
 * Errors: {@link UpstreamHttpError} for a non-2xx status or a non-`text/event-stream` body
 * (status and body text kept for pass-through); {@link UpstreamResetError} when the connection
 * fails; `TimeoutError` (`connect`, `first`); the signal's abort reason when aborted.
 */
export async function openUpstreamStream(request: UpstreamRequest): Promise<UpstreamStream> {
  const call = new UpstreamCall(request);
  const response = await call.send({ accept: 'text/event-stream' });
  const contentType = response.headers.get('content-type') ?? undefined;
  if (!response.ok || !contentType?.startsWith('text/event-stream')) {
    const body = await call.text(response);
    call.release();
    throw new UpstreamHttpError(response.ok ? 502 : response.status, body, contentType, retryAfterMs(response.headers.get('retry-after')));
  }
  let body = fromReadable<Buffer>(response.body as unknown as Readable, { onCancel: () => call.release() }).pipe(
    operator<Buffer, Buffer>((actual, context) => new BodySubscriber(actual, context, call)),
  );
  if ((request.idleTimeoutMs ?? 0) > 0) body = body.pipe(idleTimeout<Buffer>(request.idleTimeoutMs as number));
  return { response, body };
}

/**
 * Sends `request` and reads the whole answer (the non-stream routes). Same agent, headers and
 * timeouts as {@link openUpstreamStream}; the first-byte deadline covers the status line.
 *
 * Errors: {@link UpstreamHttpError} for a non-2xx status (body kept for pass-through),
 * {@link UpstreamResetError}, `TimeoutError`, the signal's reason.
 */
export async function fetchUpstream(request: UpstreamRequest): Promise<UpstreamBody> {
  const call = new UpstreamCall(request);
  const response = await call.send({ accept: 'application/json' });
  call.firstByte();
  const contentType = response.headers.get('content-type') ?? undefined;
  try {
    const body = await response.buffer();
    if (!response.ok) {
      throw new UpstreamHttpError(response.status, body.toString('utf8'), contentType, retryAfterMs(response.headers.get('retry-after')));
    }
    call.release(false);
    return { status: response.status, contentType, body };
  } catch (err) {
    const mapped = call.mapError(err);
    call.release();
    throw mapped;
  }
}

/** One attempt: owns the AbortController, the connect and first-byte timers and the caller's signal listener. */
class UpstreamCall {
  readonly controller = new AbortController();
  private firstByteTimer: NodeJS.Timeout | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private released = false;

  constructor(readonly request: UpstreamRequest) {
    if (request.signal?.aborted) this.onAbort();
    request.signal?.addEventListener('abort', this.onAbort, { once: true });
    const firstByteMs = request.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS;
    if (firstByteMs > 0) {
      this.firstByteTimer = setTimeout(() => this.abort(new TimeoutError('first', firstByteMs, `upstream sent no byte within ${firstByteMs} ms`)), firstByteMs);
    }
  }

  private readonly onAbort = (): void => this.abort(this.request.signal?.reason);

  abort(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    if (reason === undefined) this.controller.abort();
    else this.controller.abort(reason);
  }

  async send(headers: Record<string, string>): Promise<Response> {
    const { request } = this;
    const url = new URL(request.url);
    try {
      return await fetch(url, {
        method: request.method ?? 'POST',
        headers: { ...headers, 'accept-encoding': 'identity', ...request.headers },
        body: request.body,
        agent: this.agentFor(url),
        // We ask for identity (explicit header kept by node-fetch); an upstream that compresses
        // anyway is gunzipped with Z_SYNC_FLUSH rather than fed to the parser as gzip bytes.
        compress: true,
        signal: this.controller.signal as never,
      });
    } catch (err) {
      const mapped = this.mapError(err);
      this.release();
      throw mapped;
    } finally {
      this.clearConnect();
    }
  }

  async text(response: Response): Promise<string> {
    try {
      return await response.text();
    } catch {
      return '';
    }
  }

  /** The first body byte arrived: the first-byte deadline is met. */
  firstByte(): void {
    if (this.firstByteTimer !== undefined) clearTimeout(this.firstByteTimer);
    this.firstByteTimer = undefined;
  }

  /** Maps a fetch or body error to what callers see: our own abort reason, or a reset. */
  mapError(err: unknown): unknown {
    if (this.controller.signal.aborted) return this.controller.signal.reason ?? err;
    if (err instanceof TidegateError) return err;
    return new UpstreamResetError(`upstream connection failed: ${(err as Error).message}`, { cause: err });
  }

  /** Stops the timers and detaches from the caller's signal; aborts the request unless it ended cleanly (`abort: false` keeps the socket for reuse). */
  release(abort = true): void {
    if (this.released) return;
    this.released = true;
    this.firstByte();
    this.clearConnect();
    this.request.signal?.removeEventListener('abort', this.onAbort);
    if (abort) this.abort(undefined);
  }

  private clearConnect(): void {
    if (this.connectTimer !== undefined) clearTimeout(this.connectTimer);
    this.connectTimer = undefined;
  }

  /**
   * The shared keep-alive agent, seen through an object whose `addRequest` times the
   * connection of a new socket (node-fetch exposes no request object to hook).
   */
  private agentFor(url: URL): http.Agent {
    const shared = upstreamAgent(url);
    const connectMs = this.request.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    if (connectMs <= 0) return shared;
    const view = Object.create(shared) as http.Agent & { addRequest(req: http.ClientRequest, options: unknown): void };
    const addRequest = (shared as unknown as { addRequest(req: http.ClientRequest, options: unknown): void }).addRequest;
    view.addRequest = (req: http.ClientRequest, options: unknown): void => {
      req.once('socket', (socket: Socket) => {
        if (!socket.connecting) return;
        this.connectTimer = setTimeout(() => this.abort(new TimeoutError('connect', connectMs, `upstream connection not established within ${connectMs} ms`)), connectMs);
        socket.once('connect', () => this.clearConnect());
      });
      addRequest.call(shared, req, options);
    };
    return view;
  }
}

/** Clears the first-byte deadline on the first chunk and turns body errors into typed ones. */
class BodySubscriber extends OperatorSubscriber<Buffer, Buffer> {
  constructor(
    actual: Subscriber<Buffer>,
    context: FlowContext,
    private readonly call: UpstreamCall,
  ) {
    super(actual, context);
  }

  onNext(value: Buffer): void {
    this.call.firstByte();
    this.actual.onNext(value);
  }

  override onError(error: unknown): void {
    const mapped = this.call.mapError(error);
    this.call.release();
    super.onError(mapped);
  }

  override onComplete(): void {
    this.call.release(false);
    super.onComplete();
  }

  override cancel(): void {
    super.cancel(); // detaches the body's listeners first, then its onCancel aborts the request
    this.call.release();
  }
}

/** Parses `Retry-After` (seconds or an HTTP date) into ms; `undefined` when absent or invalid. */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
