import http from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Readable, Writable } from 'node:stream';
import fetch, { type Response } from 'node-fetch';
import { TidegateError, TimeoutError } from '../errors';
import type { Flow } from '../flow/flow';
import { idleTimeout } from '../flow/operators/idle-timeout';
import { OperatorSubscriber, operator } from '../flow/operators/operator-subscriber';
import { fromReadable } from '../flow/sources/readable';
import { timerScheduler } from '../flow/timer-scheduler';
import type { FlowContext, Subscriber } from '../flow/types';
import { readBounded } from './read-bounded';
import { DEFAULT_MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES, MAX_REDIRECTS, networkError, UpstreamBodyTooLargeError, UpstreamEncodingError, UpstreamRedirectError, UpstreamUpgradeError } from './errors';
import { bodyCoding, transferCodings } from './content-coding';
import { bypassBodyCallbacks } from './body-bypass';
import { bodyIsResponse, callAgent, CallSignal, dropReceivedHeaders, dropSentHeaders, expectRedirect, readCallOf, releaseFetchListeners, setReadCall, strictGzipEnd, withClientRequest, type SizedReadCall } from './node-hooks';
import { markListeners, type ListenerMark } from './listener-mark';
import type { AbortSignalLike } from './abort-signal-like';
import { decodeBody } from './body-charset';
import { SocketDeadline } from './socket-deadline';

/** Default time to first byte of the upstream body, ms: models think before they speak. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 60_000;
/** Default time to establish the TCP (and TLS) connection, ms. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Which 3xx answers a call follows: none (`false`), any (`true`, as node-fetch and EventSource
 * do), or only those whose `Location` stays on the request URL's origin (`'same-origin'`:
 * scheme, host and port), so headers such as `x-api-key`, which node-fetch keeps on a redirect
 * to another host, never leave it. At most {@link MAX_REDIRECTS} are followed.
 */
export type FollowRedirects = boolean | 'same-origin';

/** One upstream call. Every timeout is in ms; 0 disables it. */
export interface UpstreamRequest {
  url: string;
  method?: 'GET' | 'POST' | undefined;
  headers?: Record<string, string> | undefined;
  body?: string | Buffer | undefined;
  /** Aborting it aborts the HTTP request and closes the upstream socket; its reason is what the call rejects or errors with. */
  signal?: AbortSignalLike | undefined;
  /** A new connection must be established within this (default 10000 ms); a reused keep-alive socket is not timed. Signals `TimeoutError('connect')`. */
  connectTimeoutMs?: number | undefined;
  /** The first body byte must arrive within this of the call (default 60000 ms). Signals `TimeoutError('first')`. */
  firstByteTimeoutMs?: number | undefined;
  /** Longest silence between body chunks while the reader has demand (default 0 = off). Signals `TimeoutError('idle')`. */
  idleTimeoutMs?: number | undefined;
  /**
   * `true`: a streamed body's chunks are not timed here, its reader times its events by
   * `idleTimeoutMs` itself (the gateway's relays: comments and blank lines are bytes but no
   * progress). Error and whole bodies are still timed by `idleTimeoutMs`.
   */
  idleTimedByEvents?: boolean | undefined;
  /**
   * Called after each read of the response body's socket was handed to the response, before any
   * consumer asked for it: where bytes enter userland, e.g. to record a budget's peak.
   */
  onRead?: (() => void) | undefined;
  /**
   * Most bytes the next read of the body's socket may take, asked after each read with the bytes
   * the call holds unread ({@link UpstreamStream.bufferedBytes}, known before the call resolves);
   * plain HTTP with an identity body only (TLS sockets read as Node does, zlib inflates unasked:
   * see {@link UpstreamStream.readsSized}). Clamped to 1–64 KiB (rounded down to whole KiB);
   * default {@link UPSTREAM_READ_BYTES}. A byte relay passes its budget's free room, so reads are
   * as large as the budget allows and never larger (the smallest read, 1 KiB, excepted).
   */
  readBytes?: ((unreadBytes: number) => number) | undefined;
  /**
   * With {@link readBytes}: asked before a read's body is pushed and after each read once the
   * next one was sized, `true` when no view of any body chunk the call pushed is held, neither by
   * the consumer nor unread in the call ({@link UpstreamStream.bufferedBytes} is 0): every byte
   * went on to the kernel or was dropped. The call then reuses the buffers of its chunks for
   * later reads' bodies instead of leaving them to the garbage collector. Only for a consumer
   * that knows every holder of its chunks: a wrong `true` lets a later read overwrite bytes still
   * held.
   */
  bodyReleased?: (() => boolean) | undefined;
  /**
   * Most bytes of a whole body read by {@link fetchUpstream} (default 8 MiB,
   * {@link DEFAULT_MAX_BODY_BYTES}); an error body is read up to the lower of this and
   * {@link MAX_ERROR_BODY_BYTES} (64 KiB). A longer body aborts the request and signals
   * {@link UpstreamBodyTooLargeError}.
   */
  maxBodyBytes?: number | undefined;
  /**
   * The route this call serves, e.g. `/v1/chat/completions`: error messages name it (`upstream
   * for route /v1/chat/completions unreachable (ECONNREFUSED)`) and never the URL, whose host,
   * userinfo or query a client must not see.
   */
  route?: string | undefined;
  /**
   * Which 3xx answers to follow ({@link FollowRedirects}; default `false`: a redirect rejects with
   * {@link UpstreamRedirectError}, nothing is sent to the address it names). A redirect past
   * {@link MAX_REDIRECTS}, or off the origin with `'same-origin'`, is not followed either: the
   * call ends with {@link UpstreamRedirectError} (`reason` `too-many`, `other-origin`).
   */
  followRedirects?: FollowRedirects | undefined;
}

/**
 * @internal What one call sends: an {@link UpstreamRequest} whose method may be any token and
 * whose body may be any bytes, through the caller's own `agent` when given (the SSE client's
 * `agent` option; default the upstream agent, see `callAgent`).
 */
export type CallRequest = Omit<UpstreamRequest, 'method' | 'body'> & {
  method?: string | undefined;
  body?: string | Uint8Array | undefined;
  agent?: http.Agent | undefined;
};

/** @internal One attempt: owns the abort signal node-fetch watches, the connect and first-byte timers and the caller's signal listener. */
export class UpstreamCall implements SizedReadCall {
  readonly signal = new CallSignal();
  /** Bytes the body source parked (see `fromReadable`'s `parked`). */
  readonly parked = { bytes: 0 };
  /** The response body stream (the `IncomingMessage` itself, unless compressed). */
  body: Readable | undefined;
  /** The final response, once it arrived. */
  private incoming: http.IncomingMessage | undefined;
  /** The final response's body reaches node-fetch's reader uncompressed, or is never read (read from its head, which a streamed body does not keep). */
  private identityBody = false;
  /** The final response is an error answer whose body is never read: in a coding nobody here decodes, or in deflate (see `onResponse`). */
  private undecodable = false;
  private firstByteTimer: SocketDeadline | undefined;
  private connectTimer: SocketDeadline | undefined;
  private released = false;
  /** The request being sent and node-fetch's listeners before it added its own, until the answer came. */
  private sending: { req: http.ClientRequest; reqMark: ListenerMark; resMark?: ListenerMark } | undefined;
  /** The request, once node-fetch's listeners were dropped ({@link releaseFetchListeners}): an abort destroys it here. */
  private req: http.ClientRequest | undefined;
  /** Redirects followed so far. */
  private redirects = 0;
  /** The redirect this call was told to follow but did not: the answer it ends with. */
  refusedRedirect: UpstreamRedirectError | undefined;

  constructor(readonly request: CallRequest) {
    if (request.signal?.aborted) this.onAbort();
    request.signal?.addEventListener('abort', this.onAbort, { once: true });
    const firstByteMs = request.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS;
    if (firstByteMs > 0) {
      this.firstByteTimer = new SocketDeadline(firstByteMs, () => {
        // Bytes that arrived but were not asked for yet meet the deadline.
        if (this.bufferedBytes() === 0) this.abort(new TimeoutError('first', firstByteMs, `upstream sent no byte within ${firstByteMs} ms`));
      });
    }
  }

  private readonly onAbort = (): void => this.abort(this.request.signal?.reason);

  abort(reason: unknown): void {
    if (this.signal.aborted) return;
    // An aborted call has no deadline left: its timers must not outlive it (a body never
    // subscribed is never released, and would keep the process alive until the first-byte one).
    this.firstByte();
    this.clearConnect();
    this.signal.abort(reason);
    // node-fetch no longer listens to the signal once its listeners were dropped: what its abort did.
    this.req?.destroy();
    // node-fetch only emits 'error' on the body; a body not yet subscribed (or a zlib body, which
    // the response's destruction does not reach) would otherwise never end for a later subscriber.
    if (this.body !== undefined && !this.body.destroyed) this.body.destroy();
  }

  async send(headers: Record<string, string>): Promise<Response> {
    const { request } = this;
    const url = request.url;
    try {
      checkUrl(url);
      const pending = withClientRequest(this.attach, () =>
        fetch(url, {
          method: request.method ?? 'POST',
          headers: callHeaders(headers, request.headers),
          body: request.body,
          agent: callAgent(url, request.agent),
          // We ask for identity (explicit header kept by node-fetch); an upstream that compresses
          // anyway is gunzipped with Z_SYNC_FLUSH rather than fed to the parser as gzip bytes.
          compress: true,
          signal: this.signal as never,
          redirect: followsRedirects(request.followRedirects) ? 'follow' : 'manual',
        }),
      );
      const response = await pending;
      strictGzipEnd(response.body);
      this.dropFetchListeners(response);
      return response;
    } catch (err) {
      const mapped = this.mapError(err);
      this.release();
      throw mapped;
    } finally {
      this.clearConnect();
    }
  }

  /**
   * node-fetch's closures hold its `Request` (headers, body), the parsed URL and the request
   * options for as long as the call lives: once the answer came, an identity body no longer needs
   * them (a zlib body does: node-fetch forwards the request's errors to it).
   */
  private dropFetchListeners(response: Response): void {
    const sending = this.sending;
    this.sending = undefined;
    if (sending?.resMark === undefined || this.incoming === undefined || (response.body as unknown) !== this.incoming) return;
    releaseFetchListeners(sending.req, sending.reqMark, this.incoming, sending.resMark, this.signal);
    dropSentHeaders(sending.req);
    this.req = sending.req;
  }

  /** Sees the `ClientRequest` node-fetch created (from the agent): times a new connection, takes the response. */
  private readonly attach = (req: http.ClientRequest): void => {
    this.sending = { req, reqMark: markListeners(req) };
    const connectMs = this.request.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    if (connectMs > 0) {
      req.once('socket', (socket: Socket) => {
        if (!socket.connecting) return;
        this.connectTimer = new SocketDeadline(connectMs, () => this.abort(new TimeoutError('connect', connectMs, `upstream connection not established within ${connectMs} ms`)));
        socket.once('connect', () => this.clearConnect());
      });
    }
    // A `101 Switching Protocols`: without this listener Node destroys the socket and emits only
    // 'close', which node-fetch never settles on (the call would wait out firstByteMs). An
    // upgraded connection is no answer to relay: the call fails now, and is not retried.
    req.once('upgrade', (res: http.IncomingMessage, socket: Socket) => {
      socket.destroy();
      this.abort(new UpstreamUpgradeError(res.statusCode, this.request.route));
    });
    req.once('response', (res: http.IncomingMessage) => {
      this.onResponse(res);
      // node-fetch adds its own next (this listener runs first): they are the ones after this mark.
      if (this.incoming === res && this.sending?.req === req) this.sending.resMark = markListeners(res);
    });
  };

  /** Takes the final response: its body is the `IncomingMessage` itself, its socket's reads sized and bypassed. */
  private onResponse(res: http.IncomingMessage): void {
    // node-fetch follows a redirect with a request of its own, sent from its 'response' listener
    // (registered after this one, run synchronously next): the agent hands that one to this
    // call too. Only a final answer is kept.
    const status = res.statusCode ?? 0;
    // A 101 without an `Upgrade` header reaches 'response', not 'upgrade': the same refusal, and
    // its socket must not go back to the keep-alive pool.
    if (status === 101) {
      res.socket?.destroy();
      this.abort(new UpstreamUpgradeError(status, this.request.route));
      return;
    }
    const follow = this.request.followRedirects;
    if (followsRedirects(follow) && res.headers.location !== undefined && isRedirect(status)) {
      const reason = this.redirects >= MAX_REDIRECTS ? 'too-many' : follow === 'same-origin' && !sameOrigin(res.headers.location, this.request.url) ? 'other-origin' : undefined;
      if (reason === undefined) {
        this.redirects++;
        expectRedirect(this.attach);
        return;
      }
      // Without a `Location` node-fetch resolves with this answer instead of following it (an
      // abort here would leave its next request's rejection unhandled): the caller refuses it.
      delete res.headers.location;
      this.refusedRedirect = new UpstreamRedirectError(status, this.request.route, reason);
    }
    const method = this.request.method ?? 'POST';
    const bodiless = method === 'HEAD' || status === 204 || status === 304;
    // node-fetch ignores the coding where no body comes, as here.
    const coding = bodiless ? undefined : bodyCoding(res.headers['content-encoding']);
    // Node's parser takes `chunked` off a transfer coding list and leaves any other coding on the body.
    const transfer = bodiless ? undefined : transferCodings(res.headers['transfer-encoding']);
    const refused = transfer !== undefined ? { header: 'Transfer-Encoding' as const, codings: transfer } : coding?.kind === 'refused' ? { header: 'Content-Encoding' as const, codings: coding.codings } : undefined;
    if (refused !== undefined) {
      // Read as identity, such a body would be relayed as garbage or end as a truncated stream.
      // A 2xx is no answer then; an error answer still is one by its status, without its body.
      if (status < 300) {
        this.abort(new UpstreamEncodingError(status, res.headers[refused.header.toLowerCase()] as string, refused.codings, this.request.route, refused.header));
        return;
      }
      this.undecodable = true;
    } else if (coding?.kind === 'decoded' && status >= 400 && (coding.coding === 'deflate' || coding.coding === 'x-deflate')) {
      // node-fetch hands a deflate answer over only once its first body byte came (it peeks to
      // choose the format), so a silent or closed error body would hide the status: its status is
      // the answer, its body not read.
      delete res.headers['content-encoding'];
      this.undecodable = true;
    }
    // node-fetch decodes a coding only as it spells it, alone: `GZIP` or `identity, gzip` must read `gzip`.
    if (coding?.kind === 'decoded' && !this.undecodable) res.headers['content-encoding'] = coding.coding;
    this.incoming = res;
    this.identityBody = coding === undefined || coding.kind === 'identity' || this.undecodable;
    if (!this.identityBody) {
      // node-fetch pipes a compressed body into zlib, and a pipe does not pass on the response's
      // premature close: the decoder would wait for bytes that never come.
      res.once('close', () => {
        if (res.complete || this.released) return;
        const cut = networkError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }), status, this.request.route);
        // An error answer's status is still the answer: its reader takes the broken body as ''.
        if (status >= 300 && this.body !== undefined && !this.body.destroyed) this.body.destroy(cut);
        else this.abort(cut);
      });
    }
    bodyIsResponse(res);
    const socket = res.socket;
    if (socket === null) return;
    // TLS sockets do not read through `onread`: their reads are not sized.
    const sized = this.request.readBytes !== undefined && !(socket as Partial<TLSSocket>).encrypted;
    const observed = this.request.onRead !== undefined;
    if (sized) setReadCall(socket, this);
    // One push per socket read instead of one per HTTP chunk; it calls onRead once pushed.
    const bypassed = bypassBodyCallbacks(res, method, observed ? this.onSocketData : undefined, sized ? this.request.bodyReleased : undefined);
    // Else after the HTTP parser's own 'data' listener: the bytes are in the response by then.
    const listening = observed && !bypassed;
    if (listening) socket.on('data', this.onSocketData);
    if (!sized && !listening) return;
    // The socket outlives the response (keep-alive): both go once the response is over.
    const off = (): void => {
      if (readCallOf(socket) === this) setReadCall(socket, undefined);
      if (listening) socket.off('data', this.onSocketData);
    };
    // `on`, not `once`: a once wrapper costs ~150 bytes for as long as the stream lasts; `off` is idempotent.
    res.on('end', off);
    res.on('close', off);
  }

  private readonly onSocketData = (): void => this.request.onRead?.();

  /** See {@link UpstreamStream.readsSized}: an identity body (no zlib) on a socket that reads through `onread`, not complete yet. */
  readsSized(): boolean {
    const { incoming } = this;
    if (this.request.readBytes === undefined || incoming === undefined || incoming.complete) return false;
    return this.identityBody && readCallOf(incoming.socket) === this;
  }

  /** The size of the next read of this call's socket: the request's `readBytes` of what the call holds unread. */
  nextReadBytes(): number {
    return (this.request.readBytes as (unreadBytes: number) => number)(this.bufferedBytes());
  }

  /** See {@link UpstreamStream.bufferedBytes}. */
  bufferedBytes(): number {
    if (this.released) return 0;
    const { body, incoming } = this;
    let bytes = this.parked.bytes;
    if (body !== undefined) bytes += body.readableLength + ((body as unknown as Partial<Writable>).writableLength ?? 0);
    if (incoming !== undefined) {
      if (incoming !== body) bytes += incoming.readableLength;
      // A socket back in the keep-alive pool may already carry another call's response.
      if (!incoming.complete) bytes += incoming.socket?.readableLength ?? 0;
    }
    return bytes;
  }

  /**
   * The body as bytes with demand: the socket is read only while it is requested; cancel aborts
   * the request, the end releases the call (the socket back to the pool). Errors are typed
   * ({@link UpstreamCall.mapError}); the request's `idleTimeoutMs` watches the gaps.
   */
  streamBody(response: Response): Flow<Buffer> {
    const source = response.body as unknown as Readable;
    this.body = source;
    // The head was read (node-fetch copied it into the response's `Headers`): a stream that lasts
    // for minutes does not keep the upstream's header map too.
    if (this.incoming !== undefined) dropReceivedHeaders(this.incoming);
    let body = fromReadable<Buffer>(source, { onCancel: () => this.release(), parked: this.parked }).pipe(
      operator<Buffer, Buffer>((actual, context) => new BodySubscriber(actual, context, this)),
    );
    if ((this.request.idleTimeoutMs ?? 0) > 0 && this.request.idleTimedByEvents !== true) body = body.pipe(idleTimeout<Buffer>(this.request.idleTimeoutMs as number, timerScheduler));
    return body;
  }

  /**
   * The first `maxBytes` of the body as text ({@link bodyText}; the rest is not read: the call is
   * released and its request aborted), '' when the body breaks or is in a coding not decoded
   * (unread). For error answers a client reports but never trusts to be small. A body that goes
   * silent is cut there, as {@link errorBody}'s is: after the request's `idleTimeoutMs`, else its
   * first-byte timeout (the status line met that deadline; from here only the silence is timed).
   */
  async headText(response: Response, maxBytes: number): Promise<string> {
    const source = response.body as unknown as Readable;
    this.body = source;
    if (this.undecodable) {
      this.release();
      return '';
    }
    this.firstByte();
    try {
      return bodyText(await readBounded(source, { maxBytes, truncate: true, tooLarge: () => undefined, idleMs: this.errorBodySilenceMs(), idled: () => undefined }), response);
    } catch {
      return ''; // a broken error body: the status says enough
    } finally {
      this.release(!source.readableEnded); // a body read to its end leaves its socket to the pool
    }
  }

  /**
   * The whole body, read up to `maxBytes`: past it the request is aborted (socket destroyed) and
   * this rejects with {@link UpstreamBodyTooLargeError}. The body is read as it arrives, never
   * with node-fetch's unbounded `buffer()` / `text()`. A silence of the request's `idleTimeoutMs`
   * aborts the request with `TimeoutError('idle')`; with `silence: 'partial'` (an error body) it
   * resolves with what arrived instead (silence: `idleTimeoutMs`, else the first-byte timeout),
   * the request left to release. An error answer's body in a coding not decoded resolves empty,
   * unread, the request left to release.
   */
  readBody(response: Response, maxBytes: number, silence: 'timeout' | 'partial' = 'timeout'): Promise<Buffer> {
    const source = response.body as unknown as Readable;
    this.body = source;
    // An error answer whose coding nobody here decodes: its status is the answer (the caller releases the call).
    if (this.undecodable) return Promise.resolve(Buffer.alloc(0));
    return readBounded(source, {
      maxBytes,
      tooLarge: (limit) => {
        const error = new UpstreamBodyTooLargeError(response.status, limit, this.request.route);
        this.abort(error);
        return error;
      },
      idleMs: silence === 'partial' ? this.errorBodySilenceMs() : this.request.idleTimeoutMs,
      idled: (ms) => {
        if (silence === 'partial') return undefined;
        const error = new TimeoutError('idle', ms);
        this.abort(error);
        return error;
      },
      // Destroyed without an error (an abort elsewhere): nothing more will come.
      closedEarly: () => new Error('upstream body closed before its end'),
    });
  }

  /**
   * The body of an error answer, at most the lower of `maxBodyBytes` and
   * {@link MAX_ERROR_BODY_BYTES} ('' if it breaks or is in a coding not decoded); a longer one rejects with
   * {@link UpstreamBodyTooLargeError}; an abort meanwhile rejects with its reason, as the call's does.
   * A body that goes silent is cut there (see {@link readBody}): what arrived is the text.
   */
  async errorBody(response: Response): Promise<string> {
    const maxBytes = Math.min(this.request.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES);
    // The status line is the answer: from here only the body's silence is timed.
    this.firstByte();
    let text = '';
    try {
      text = bodyText(await this.readBody(response, maxBytes, 'partial'), response);
    } catch {
      // a broken error body: the status says enough
    }
    if (this.signal.aborted) throw this.signal.reason;
    return text;
  }

  /** The silence after which an error answer's body is cut where it stands, ms: the request's `idleTimeoutMs`, else its first-byte timeout (0: none). */
  private errorBodySilenceMs(): number {
    return this.request.idleTimeoutMs || (this.request.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS);
  }

  /** The first body byte arrived: the first-byte deadline is met. */
  firstByte(): void {
    this.firstByteTimer?.clear();
    this.firstByteTimer = undefined;
  }

  /**
   * Maps a fetch or body error to what callers see: our own abort reason, or a reset naming the
   * route and the network error's code, never the URL (node-fetch's message holds it; `cause`
   * keeps it for logs). A reset after the status line carries that `status`.
   */
  mapError(err: unknown): unknown {
    if (this.signal.aborted) return this.signal.reason ?? err;
    if (err instanceof TidegateError) return err;
    return networkError(err, this.incoming?.statusCode, this.request.route);
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
    this.connectTimer?.clear();
    this.connectTimer = undefined;
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

/**
 * `{ ...headers, 'accept-encoding': 'identity', ...own }`, copied key by key: V8 builds an object
 * literal with a spread followed by more properties on its slow path (about 5 µs per call).
 */
function callHeaders(headers: Record<string, string>, own: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(headers)) define(out, key, headers[key] as string);
  out['accept-encoding'] = 'identity';
  if (own !== undefined) for (const key of Object.keys(own)) define(out, key, own[key] as string);
  return out;
}

/** `out[key] = value` as a spread defines it (a `__proto__` key is an own property, not the prototype). */
function define(out: Record<string, string>, key: string, value: string): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** URLs {@link checkUrl} found valid; cleared when full (a passthrough route's URLs carry each client's query). */
const validUrls = new Set<string>();
const MAX_VALID_URLS = 256;

/**
 * Throws as `new URL(url)` does for an invalid one (before node-fetch sees it, with the URL
 * parser's error). node-fetch parses the URL itself, twice, and the agent is picked by its
 * scheme: a URL already checked is not parsed a third time.
 */
function checkUrl(url: string): void {
  if (validUrls.has(url)) return;
  new URL(url);
  if (validUrls.size >= MAX_VALID_URLS) validUrls.clear();
  validUrls.add(url);
}

/** `location`, resolved against `url`, has `url`'s scheme, host and port; an unparsable one has not. */
function sameOrigin(location: string, url: string): boolean {
  try {
    return new URL(location, url).origin === new URL(url).origin;
  } catch {
    return false;
  }
}

/** A status node-fetch follows as a redirect. */
export const isRedirect = (status: number): boolean => status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/** A status of the 3xx (Redirection) class, RFC 9110 §15.4: followable or not. */
export const is3xx = (status: number): boolean => status >= 300 && status <= 399;

/** Whether a call with `follow` follows redirects at all (`true`, `'same-origin'`). */
export const followsRedirects = (follow: FollowRedirects | undefined): boolean => follow === true || follow === 'same-origin';

/**
 * The refusal of a 3xx final answer that no call followed: `not-followed` for a redirect a call
 * that follows none was given, `unfollowable` for any other (a 300, 304, 305, or a redirect that
 * could not be followed, e.g. without `Location`).
 */
export function unfollowedRedirect(status: number, route: string | undefined, follow: FollowRedirects | undefined): UpstreamRedirectError {
  return new UpstreamRedirectError(status, route, isRedirect(status) && !followsRedirects(follow) ? 'not-followed' : 'unfollowable');
}

/** An upstream body's bytes as text in its charset ({@link decodeBody}). */
function bodyText(bytes: Buffer, response: Response): string {
  return decodeBody(bytes, response.headers.get('content-type'));
}
