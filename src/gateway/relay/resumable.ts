import { connectRouteSse } from '../../client/connect-sse';
import { SseConnectionError, SseHttpError } from '../../errors';
import { Flow } from '../../flow/flow';
import type { Subscriber, Subscription } from '../../flow/types';
import type { SseEvent } from '../../sse/codec/parser';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_FIRST_BYTE_TIMEOUT_MS, is3xx, unfollowedRedirect, type FollowRedirects } from '../../http/call';
import { MAX_ERROR_BODY_BYTES, UpstreamBodyTooLargeError, UpstreamHttpError, UpstreamNotStreamError, UpstreamRedirectError, UpstreamResetError, upstreamOf } from '../../http/errors';
import { retryDelayMs } from '../../http/retry';
import type { AbortSignalLike } from '../../http/abort-signal-like';

/** Options of {@link openResumableStream}: the upstream call, plus the reconnection budget. */
export interface ResumableRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | Buffer;
  signal: AbortSignalLike;
  /**
   * The gateway's drain: aborted before a connection answered, no further attempt starts, a
   * backoff or `Retry-After` wait in progress ends at once, and the promise rejects with the last
   * attempt's error, as when attempts ran out. Once a connection answered it is no longer watched:
   * a dropped upstream is reconnected through the drain's grace.
   */
  stopBeforeOpen?: AbortSignalLike | undefined;
  /** The client's `Last-Event-ID`, sent on the first upstream request. */
  lastEventId: string;
  /** Failed connections in a row before giving up. */
  maxAttempts: number;
  /**
   * Reconnects after the first answer, events or not (the route's `retry.maxReconnects`); once
   * spent the flow fails with {@link UpstreamResetError} naming the budget.
   */
  maxReconnects: number;
  /** Longest `Retry-After` waited for, ms (the route's `retry.maxRetryAfterMs`): a longer one ends the stream with that answer. */
  maxRetryAfterMs: number;
  /** Base of the reconnect backoff when the upstream sent no `retry:`, ms (the route's `retry.baseDelayMs`). */
  initialDelayMs: number;
  /** Ceiling of the reconnect backoff and of the upstream's `retry:`, ms (the route's `retry.maxDelayMs`). */
  maxDelayMs: number;
  /** Reconnect when the upstream sent nothing for this long, ms (0: never). */
  idleTimeoutMs: number;
  /** Each attempt's new connection must be established within this, ms (0: never; default 10000). */
  connectTimeoutMs?: number | undefined;
  /** Each attempt's first body byte must arrive within this, ms (0: never; default 60000). */
  firstByteTimeoutMs?: number | undefined;
  /** Which 3xx answers to follow (the route's `followRedirects`, as `'same-origin'`; default `false`: {@link UpstreamRedirectError}). */
  followRedirects?: FollowRedirects | undefined;
  /** The route, named in errors instead of the URL. */
  route?: string | undefined;
  maxEventBytes: number;
  /** Largest SSE line, bytes (default 1 MiB). */
  maxLineBytes?: number | undefined;
  /** Hands over a count of the bytes of the upstream's unfinished line and event, for the stream's budget (see `ConnectSseOptions.attachHeld`). */
  attachHeld?: ((heldBytes: () => number) => void) | undefined;
  /** The event that ends the stream (no reconnect after it). */
  isTerminal?: (event: SseEvent) => boolean;
  /**
   * Each request as it is about to be sent: the first, then each reconnect once its wait ended
   * (`connectSse`'s `onConnecting`). A wait the client's leaving, `signal` or `stopBeforeOpen`
   * ended starts none, and none is reported.
   */
  onConnecting?: (() => void) | undefined;
  /** Each connection that answered a streaming 2xx (the first, then each reconnect's). */
  onOpen?: (() => void) | undefined;
  /**
   * Each failed attempt that is followed by a wait for another (`connectSse`'s `onReconnect`),
   * as it fails; the last failure rejects or errors the flow instead.
   */
  onReconnect?: ((error: unknown) => void) | undefined;
  /**
   * Once, when the flow the promise resolved with ends: the error it failed with, or `undefined`
   * when it completed or was cancelled.
   */
  onEnd?: ((error: unknown) => void) | undefined;
}

/**
 * Opens a resumable upstream event stream with `connectSse` (reconnect with `Last-Event-ID`)
 * (reconnects bounded by `maxReconnects`, with a growing backoff)
 * and resolves once its first connection answered a streaming 2xx, so the gateway still commits
 * headers only after the upstream did. The returned Flow may be subscribed once; nothing is read
 * before it is subscribed and asks.
 *
 * Errors (rejection): {@link UpstreamHttpError} for an HTTP error before the first connection
 * opened, {@link UpstreamRedirectError} for a 3xx it did not follow, {@link UpstreamNotStreamError}
 * for a 2xx that is not a 200 `text/event-stream`, `UpstreamEncodingError` for a 2xx in a content
 * coding not decoded (also after it opened: never reconnected), `UpstreamUnreachableError` when its last attempt could not connect at all
 * (refused, unresolvable, no route), {@link UpstreamResetError} when it failed otherwise, the
 * signal's reason.
 */
export function openResumableStream(request: ResumableRequest): Promise<Flow<SseEvent>> {
  return new Promise((resolve, reject) => {
    const map = (err: unknown): unknown => mapError(err, request.route, request.followRedirects);
    const handoff = new Handoff(map, request.onEnd);
    const stop = request.stopBeforeOpen === undefined ? undefined : new UntilOpen(request.stopBeforeOpen);
    const body = request.body === undefined ? undefined : typeof request.body === 'string' ? request.body : new Uint8Array(request.body);
    let opened = false;
    // Reconnects after the first answer: `maxReconnects` bounds these only (retries before it are
    // bounded by `maxAttempts`, as on every route).
    let reconnectsAfterOpen = 0;
    // A first answer that opened no stream (a 204: connectSse stops there).
    let notStream: UpstreamNotStreamError | undefined;
    const flow = connectRouteSse(request.url, {
      method: request.method,
      headers: request.headers,
      body,
      signal: request.signal,
      stopReconnects: stop,
      lastEventId: request.lastEventId,
      maxAttempts: request.maxAttempts,
      maxReconnects: Infinity,
      // A delay that grows with every reconnect, never below the upstream's `retry:`: an upstream
      // that sends an event and then goes silent each time is not reconnected every idleMs.
      backoffGrowth: 'reconnects',
      initialDelayMs: request.initialDelayMs,
      maxDelayMs: request.maxDelayMs,
      // An upstream's `retry: 3600000` would otherwise hold the client's stream (and its slot) on
      // pings until totalMs.
      maxRetryMs: request.maxDelayMs,
      idleTimeoutMs: request.idleTimeoutMs > 0 ? request.idleTimeoutMs : undefined,
      // The relay's own deadlines, per attempt, through the same HTTP stack as every other route.
      connectTimeoutMs: request.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      firstByteTimeoutMs: request.firstByteTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
      followRedirects: request.followRedirects ?? false,
      maxEventBytes: request.maxEventBytes,
      // One byte past the error-body bound: a longer body is refused (mapError), as on every route.
      maxErrorBodyBytes: MAX_ERROR_BODY_BYTES + 1,
      maxLineBytes: request.maxLineBytes,
      attachHeld: request.attachHeld,
      isTerminal: request.isTerminal,
      reconnectFilter: (error) => {
        const failure = map(error);
        if (!reconnects(failure, opened, request.maxRetryAfterMs)) return false;
        if (opened && ++reconnectsAfterOpen > request.maxReconnects) throw budgetSpent(failure, request);
        return true;
      },
      onConnecting: () => request.onConnecting?.(),
      onOpen: (info) => {
        if (!opened && info.status !== 200) {
          notStream = new UpstreamNotStreamError(info.status, info.headers.get('content-type') ?? undefined, request.route);
          return;
        }
        if (opened) return request.onOpen?.();
        opened = true;
        stop?.settle();
        handoff.onEarlyError = undefined; // from now on errors go to the subscriber of the flow
        request.onOpen?.();
        resolve(handoff.flow);
      },
      onReconnect: ({ error }) => request.onReconnect?.(map(error)),
    }, { route: request.route, idleBeforeAnswer: false });
    handoff.onEarlyError = (err) => {
      stop?.settle();
      reject(notStream ?? map(err));
    };
    flow.subscribeWith(handoff);
  });
}

/**
 * `connectSse`'s `stopReconnects` for a resumable stream: aborted while `drain` is and until
 * {@link settle}. Once settled (a connection answered) it never reads as aborted again, so a
 * stream the drain met while its first attempt was in flight still reconnects a dropped upstream.
 */
class UntilOpen implements AbortSignalLike {
  private settled = false;
  private readonly listeners = new Set<() => void>();
  private readonly onDrain = (): void => {
    for (const listener of [...this.listeners]) listener();
  };

  constructor(private readonly drain: AbortSignalLike) {
    if (!drain.aborted) drain.addEventListener('abort', this.onDrain, { once: true });
  }

  get aborted(): boolean {
    return !this.settled && this.drain.aborted;
  }
  get reason(): unknown {
    return this.drain.reason;
  }
  addEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.add(listener);
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.delete(listener);
  }
  /** The first connection answered, or the stream ended before one: the drain is no longer watched. */
  settle(): void {
    this.settled = true;
    this.drain.removeEventListener('abort', this.onDrain);
  }
}

/**
 * Whether a failed connection (`failure`, typed by `mapError`) is reconnected. Before the first
 * answer, by the rules every route retries by (`retryDelayMs`: a network error before a status
 * line, a connect timeout, 429, 502 or 503; never an answer Node's HTTP parser refused, which may
 * be billed); after it, any failure (the route resumes with `Last-Event-ID`). A `Retry-After`
 * over `maxRetryAfterMs` is never waited for: the upstream's answer passes through.
 */
function reconnects(failure: unknown, opened: boolean, maxRetryAfterMs: number): boolean {
  if (failure instanceof UpstreamHttpError && failure.retryAfterMs !== undefined && failure.retryAfterMs > maxRetryAfterMs) return false;
  if (opened) return true;
  return retryDelayMs(failure, 1, { maxAttempts: Infinity, maxRetryAfterMs }) !== undefined;
}

/** The error a stream ends with once its reconnects after the first answer ran out: the route, the budget and the last failure. */
function budgetSpent(last: unknown, request: ResumableRequest): UpstreamResetError {
  const message = last instanceof Error ? last.message : String(last);
  return new UpstreamResetError(`${upstreamOf(request.route)}: reconnect budget of ${request.maxReconnects} spent; last failure: ${message}`, {
    cause: last,
    errno: last instanceof UpstreamResetError ? last.errno : undefined,
  });
}

function mapError(err: unknown, route?: string, follow?: FollowRedirects): unknown {
  // connectSse hands back any 3xx it did not follow; none reaches the client as it came.
  if (err instanceof SseHttpError && is3xx(err.status)) return unfollowedRedirect(err.status, route, follow);
  if (err instanceof UpstreamRedirectError) return new UpstreamRedirectError(err.upstreamStatus, route, err.reason);
  // A 2xx that opened no stream (not `text/event-stream`, or not a 200): its body is no answer to relay.
  if (err instanceof SseHttpError && err.status >= 200 && err.status <= 299) return new UpstreamNotStreamError(err.status, err.contentType, route);
  if (err instanceof SseHttpError && Buffer.byteLength(err.body) > MAX_ERROR_BODY_BYTES) return new UpstreamBodyTooLargeError(err.status, MAX_ERROR_BODY_BYTES, route);
  if (err instanceof SseHttpError) return new UpstreamHttpError(err.status, err.body, err.contentType, err.retryAfterMs, err.allow);
  if (err instanceof SseConnectionError) {
    // The last connection's own failure, typed and worded by the HTTP stack as on every route
    // (unreachable or reset, the route named, its errno logged); an EOF has none.
    const last = err.cause;
    return last instanceof UpstreamResetError ? last : new UpstreamResetError(err.message, { cause: err });
  }
  return err;
}

/**
 * Subscribes early (requesting nothing) and hands the subscription to the one subscriber of
 * `flow`; a terminal signal that arrives before the handoff is replayed to it.
 */
class Handoff implements Subscriber<SseEvent> {
  onEarlyError: ((err: unknown) => void) | undefined;
  private upstream: Subscription | undefined;
  private actual: Subscriber<SseEvent> | undefined;
  private terminal: { error?: unknown; complete?: true } | undefined;
  private ended = false;
  readonly flow = new Flow<SseEvent>((actual) => {
    if (this.actual !== undefined) throw new Error('a resumable upstream stream may be subscribed once');
    this.actual = actual;
    this.onEarlyError = undefined;
    actual.onSubscribe({
      request: (n) => this.upstream?.request(n),
      cancel: () => {
        this.end(undefined);
        this.upstream?.cancel();
      },
    });
    const t = this.terminal;
    if (t?.complete) this.complete(actual);
    else if (t) this.fail(actual, t.error);
  });

  /** `map` types a failure as the gateway's errors (the route named); `onEnd` hears the flow's end once. */
  constructor(
    private readonly map: (error: unknown) => unknown,
    private readonly onEnd: ((error: unknown) => void) | undefined,
  ) {}

  onSubscribe(s: Subscription): void {
    this.upstream = s;
  }
  onNext(value: SseEvent): void {
    this.actual?.onNext(value);
  }
  onError(error: unknown): void {
    if (this.actual) return this.fail(this.actual, this.map(error));
    if (this.onEarlyError) return this.onEarlyError(error);
    this.terminal = { error: this.map(error) };
  }
  onComplete(): void {
    if (this.actual) return this.complete(this.actual);
    this.terminal = { complete: true };
    this.onEarlyError?.(new UpstreamResetError('upstream ended before it opened a stream'));
  }

  private fail(actual: Subscriber<SseEvent>, error: unknown): void {
    this.end(error);
    actual.onError(error);
  }
  private complete(actual: Subscriber<SseEvent>): void {
    this.end(undefined);
    actual.onComplete();
  }
  private end(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd?.(error);
  }
}
