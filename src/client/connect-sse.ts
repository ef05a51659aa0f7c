import type http from 'node:http';
import { SseConnectionError, SseHttpError, SseLimitError, TimeoutError } from '../errors';
import { addDemand } from '../flow/demand';
import { reportDropped } from '../flow/discard';
import { Flow } from '../flow/flow';
import type { Subscriber, Subscription } from '../flow/types';
import type { SseEvent } from '../sse/codec/parser';
import { sseDecode } from '../sse/operators/sse-decode';
import { retryAfterMs as parseRetryAfter } from '../http/request';
import { backoffDelayMs } from './backoff';
import { bodyFlow, defaultSseAgent, discardBody, nodeFetchSse, readBodyText, type SseFetch, type SseFetchResponse } from './fetch';

/** The response of a connection that opened (status 2xx, `text/event-stream`), or a 204. */
export interface SseResponseInfo {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** 1 for the first connection, then one more per reconnect that reached a response. */
  readonly connection: number;
}

/** The longest delay `setTimeout` honours (2^31-1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How long a response may stay open after its terminal event before it is aborted, ms (as the gateway's `adaptProvider`). */
const DRAIN_AFTER_TERMINAL_MS = 1000;

/** Passed to {@link ConnectSseOptions.onReconnect} each time a reconnect is scheduled. */
export interface SseReconnectInfo {
  /** Failed attempts in a row, counting this failure (reset by any delivered event). */
  readonly attempt: number;
  /** The wait before the next attempt, in ms (jittered; at least `Retry-After` when sent). */
  readonly delayMs: number;
  /** Why: a network error, `TimeoutError` (idle), `SseHttpError` (429, 5xx), or an EOF `SseConnectionError`. */
  readonly error: unknown;
  /** The `Last-Event-ID` the next request will carry (`""`: none). */
  readonly lastEventId: string;
}

/** Options for {@link connectSse}. All durations are in ms, sizes in bytes. */
export interface ConnectSseOptions {
  /** HTTP method (default `'GET'`). */
  method?: string | undefined;
  /** Extra request headers; `Accept`, `Cache-Control`, `Accept-Encoding` and `Last-Event-ID` are set by the client unless given here. */
  headers?: Record<string, string> | undefined;
  /** Request body, re-sent on every reconnect (so a string or bytes, not a stream). */
  body?: string | Uint8Array<ArrayBuffer> | undefined;
  /** Aborting it ends the flow with `error(signal.reason)` and releases the connection. */
  signal?: AbortSignal | undefined;
  /** The `Last-Event-ID` of the first request, e.g. forwarded from a resuming downstream client. */
  lastEventId?: string | undefined;
  /** Reconnect after a network error, an idle timeout or an EOF (default `true`). `false`: EOF completes, errors fail. */
  reconnect?: boolean | undefined;
  /** Failed attempts in a row (connections and reconnects) before the flow fails (default `Infinity`). An event delivered resets the count. */
  maxAttempts?: number | undefined;
  /**
   * Reconnects over the stream's whole life (default `Infinity`): unlike `maxAttempts`, a delivered
   * event does not reset the count, so a server that sends an event and then drops or goes silent
   * on every connection is not reconnected forever. Reaching it fails the flow with
   * `SseConnectionError` (message names the budget, `cause` the last failure). 0: never reconnect.
   */
  maxReconnects?: number | undefined;
  /**
   * What the backoff's exponent counts (default `'failures'`): `'failures'` in a row (an event
   * resets it, as EventSource), or every reconnect of the stream (`'reconnects'`): then the delay
   * grows with each reconnect even when every connection delivered an event, and it is never
   * below the server's `retry:` (window `base * 2^(n-1)`, delay uniform in its upper half, at
   * least `retry:` and `Retry-After`).
   */
  backoffGrowth?: 'failures' | 'reconnects' | undefined;
  /** Base of the exponential backoff when the server sent no `retry:` field (default 1000 ms). */
  initialDelayMs?: number | undefined;
  /** Ceiling of the backoff window (default 30000 ms). A `Retry-After` may exceed it. */
  maxDelayMs?: number | undefined;
  /** No bytes at all (heartbeats included) for this long while waiting for headers or while events are requested = network error (default: off). */
  idleTimeoutMs?: number | undefined;
  /**
   * True for the event that ends the stream cleanly (e.g. OpenAI's `data: [DONE]`): it is delivered, then the flow
   * completes at once without reconnecting. The response body is then read to its end and dropped, so the keep-alive
   * socket goes back to the agent's pool; a response still open 1000 ms after the terminal event is aborted.
   */
  isTerminal?: ((event: SseEvent) => boolean) | undefined;
  /** The fetch to use (default node-fetch 2). Native fetch / undici are accepted (WHATWG body). */
  fetch?: SseFetch | undefined;
  /** The HTTP agent for node-fetch (default {@link defaultSseAgent}: a keep-alive pool of its own). */
  agent?: http.Agent | ((url: URL) => http.Agent) | undefined;
  /** Uniform random numbers in [0, 1) for the jitter (default `Math.random`; inject for tests). */
  random?: (() => number) | undefined;
  /** Largest SSE line, bytes (default 1 MiB); exceeding it fails the flow with `SseLimitError`, no reconnect. */
  maxLineBytes?: number | undefined;
  /** Largest SSE event data, bytes (default 1 MiB); exceeding it fails the flow with `SseLimitError`, no reconnect. */
  maxEventBytes?: number | undefined;
  /** How much of an error response body is kept in `SseHttpError.body` (default 64 KiB). */
  maxErrorBodyBytes?: number | undefined;
  /** Called when a connection opened (before any of its events), or on a 204. */
  onOpen?: ((response: SseResponseInfo) => void) | undefined;
  /** Called when a reconnect is scheduled. */
  onReconnect?: ((info: SseReconnectInfo) => void) | undefined;
  /** Called for each comment line (`: ping` heartbeats), text after the colon. */
  onComment?: ((comment: string) => void) | undefined;
}

/**
 * Opens a server-sent events stream as a `Flow<SseEvent>`: the EventSource of WHATWG HTML §9.2
 * (reconnection, `retry:`, `Last-Event-ID`, 204 = stop) with demand, bounded buffers and the
 * failure handling an HTTP client for model servers needs.
 *
 * The request is sent on subscribe; the body is read only while events are requested, so a
 * subscriber that stops requesting pauses the socket and TCP pushes back on the server.
 *
 * ```
 * server:   --a--b--c-X          (TCP drop mid-event)   --d--e--[DONE]|
 * flow:     --a--b--c----(backoff, Last-Event-ID: c)-----d--e--[DONE]|
 * ```
 *
 * Responses: 2xx `text/event-stream` streams; 204 completes (stop reconnecting, as EventSource);
 * 429 and 5xx wait (at least `Retry-After`) and retry; any other status, or another content
 * type, fails at once with {@link SseHttpError} (status, capped body).
 * Reconnection: after a network error, an EOF without a terminal event, or an idle timeout;
 * exponential backoff with full jitter from the server's `retry:` (else `initialDelayMs`),
 * capped at `maxDelayMs`, at most `maxAttempts` failures in a row and `maxReconnects` reconnects in
 * all (see `backoffGrowth` for a delay that grows across delivered events). The partial event of a dropped
 * connection is discarded (§9.2.6), the next request carries `Last-Event-ID`, and the new
 * connection's events keep the last event ID until the server sends another.
 *
 * Demand: events are delivered only as requested; the socket is read one chunk at a time while
 * demand is unmet and paused otherwise (bounded by the stream and kernel buffers).
 * Discard: a partial event at a dropped connection; events parsed beyond demand are held only
 * within one chunk (see `sseDecode`). Cancel, error and completion without a terminal event
 * release the socket (abort), every timer and the `signal` listener.
 * After a terminal event (`isTerminal`) the flow completes at once (timers and the `signal`
 * listener released), then the response body is read to its end and dropped, nothing more is
 * delivered and nothing reconnects, so the socket returns to the keep-alive pool: what most
 * servers do (OpenAI ends the body right after `data: [DONE]`). A response still open 1000 ms
 * later is aborted (socket destroyed; the timer is unref'd and cleared when the body ends or
 * fails). An error or EOF during that drain is not signalled; a cancel after completion, or an
 * abort of `signal`, does not cut it short.
 * Errors: {@link SseHttpError}; {@link SseConnectionError} (network error / EOF with reconnect off
 * or attempts spent; `cause` set); `TimeoutError` (`kind: 'idle'`) when idle with reconnect off or
 * attempts spent; {@link SseLimitError}; `signal.reason` on abort.
 *
 * @param url the event stream URL.
 * @param options request, reconnection and limits; see {@link ConnectSseOptions}.
 * @example
 * const events = connectSse('http://127.0.0.1:8000/v1/chat/completions', {
 *   method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req),
 *   reconnect: false, isTerminal: (e) => e.data === '[DONE]',
 * });
 * events.subscribe((e) => console.log(e.data));
 */
export function connectSse(url: string | URL, options: ConnectSseOptions = {}): Flow<SseEvent> {
  const resolved = resolveOptions(url, options);
  return new Flow<SseEvent>((actual) => {
    const session = new SseSession(resolved);
    session.attach(actual);
    session.start();
  });
}

/** Options after defaults and validation. */
export interface ResolvedSseOptions {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer> | undefined;
  signal: AbortSignal | undefined;
  lastEventId: string;
  reconnect: boolean;
  maxAttempts: number;
  maxReconnects: number;
  backoffGrowth: 'failures' | 'reconnects';
  initialDelayMs: number;
  maxDelayMs: number;
  idleTimeoutMs: number | undefined;
  isTerminal: ((event: SseEvent) => boolean) | undefined;
  fetch: SseFetch;
  agent: http.Agent | undefined;
  random: () => number;
  maxLineBytes: number | undefined;
  maxEventBytes: number | undefined;
  maxErrorBodyBytes: number;
  onOpen: ((response: SseResponseInfo) => void) | undefined;
  onReconnect: ((info: SseReconnectInfo) => void) | undefined;
  onComment: ((comment: string) => void) | undefined;
}

/** @internal Applies defaults; throws `RangeError` / `TypeError` for invalid options. */
export function resolveOptions(url: string | URL, options: ConnectSseOptions): ResolvedSseOptions {
  const parsed = new URL(String(url));
  const fetch = options.fetch ?? nodeFetchSse;
  const maxAttempts = options.maxAttempts ?? Infinity;
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    throw new RangeError(`connectSse: maxAttempts must be a positive integer or Infinity, got ${maxAttempts}`);
  }
  const nonNegative = (name: string, v: number | undefined): void => {
    if (v !== undefined && !(Number.isFinite(v) && v >= 0)) throw new RangeError(`connectSse: ${name} must be a finite number >= 0, got ${v}`);
  };
  const maxReconnects = options.maxReconnects ?? Infinity;
  if (!(maxReconnects === Infinity || (Number.isInteger(maxReconnects) && maxReconnects >= 0))) {
    throw new RangeError(`connectSse: maxReconnects must be an integer >= 0 or Infinity, got ${maxReconnects}`);
  }
  const backoffGrowth = options.backoffGrowth ?? 'failures';
  if (backoffGrowth !== 'failures' && backoffGrowth !== 'reconnects') {
    throw new RangeError(`connectSse: backoffGrowth must be 'failures' or 'reconnects', got ${String(backoffGrowth)}`);
  }
  nonNegative('initialDelayMs', options.initialDelayMs);
  nonNegative('maxDelayMs', options.maxDelayMs);
  if (options.idleTimeoutMs !== undefined && !(Number.isFinite(options.idleTimeoutMs) && options.idleTimeoutMs > 0)) {
    throw new RangeError(`connectSse: idleTimeoutMs must be a finite number > 0, got ${options.idleTimeoutMs}`);
  }
  const agentOption = options.agent;
  // Only node-fetch reads `agent`; a caller-supplied fetch gets one only when asked for.
  const agent = typeof agentOption === 'function' ? agentOption(parsed) : agentOption ?? (options.fetch === undefined ? defaultSseAgent(parsed) : undefined);
  const lastEventId = options.lastEventId ?? '';
  if (/[\r\n\0]/.test(lastEventId)) throw new TypeError('connectSse: lastEventId must not contain CR, LF or NUL');
  return {
    url: parsed,
    method: options.method ?? 'GET',
    headers: { ...options.headers },
    body: options.body,
    signal: options.signal,
    lastEventId,
    reconnect: options.reconnect ?? true,
    maxAttempts,
    maxReconnects,
    backoffGrowth,
    initialDelayMs: options.initialDelayMs ?? 1000,
    maxDelayMs: options.maxDelayMs ?? 30_000,
    idleTimeoutMs: options.idleTimeoutMs,
    isTerminal: options.isTerminal,
    fetch,
    agent,
    random: options.random ?? Math.random,
    maxLineBytes: options.maxLineBytes,
    maxEventBytes: options.maxEventBytes,
    maxErrorBodyBytes: options.maxErrorBodyBytes ?? 64 * 1024,
    onOpen: options.onOpen,
    onReconnect: options.onReconnect,
    onComment: options.onComment,
  };
}

type State = 'connecting' | 'streaming' | 'waiting' | 'done';

const BOM = [0xef, 0xbb, 0xbf];

/**
 * @internal One logical SSE stream across reconnects: the downstream subscription (demand is
 * summed here and re-requested from each new connection, as Reactor's
 * `MultiSubscriptionSubscriber`), the current connection, and its timers.
 *
 * The downstream may attach after `start()` (see `openSse`); until then demand is 0, so nothing
 * is read, and a terminal signal is kept for the attach.
 */
export class SseSession implements Subscription {
  private actual: Subscriber<SseEvent> | undefined;
  private pendingTerminal: { error: unknown; failed: boolean } | undefined;
  private demand = 0;
  private state: State = 'connecting';
  private generation = 0;
  private controller: AbortController | undefined;
  private inner: Subscription | undefined;
  private tap: BodyTap | undefined;
  private backoffTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private lastEventId: string;
  private serverRetryMs: number | undefined;
  private failures = 0;
  /** Reconnects scheduled over the session's life (not reset by events). */
  private reconnects = 0;
  private connections = 0;
  private readonly onAbort = (): void => this.finish(true, this.options.signal?.reason);

  /** Called once when the session ends, after the downstream was signalled (or the signal was kept). */
  onTerminate: ((failed: boolean, error: unknown) => void) | undefined;
  /** Called for the first response that opened (or a 204). */
  onFirstOpen: ((response: SseResponseInfo) => void) | undefined;

  constructor(private readonly options: ResolvedSseOptions) {
    this.lastEventId = options.lastEventId;
  }

  get terminated(): boolean {
    return this.state === 'done';
  }

  /** Attaches the downstream; a second attach is refused with an error. */
  attach(actual: Subscriber<SseEvent>): void {
    if (this.actual !== undefined) {
      actual.onSubscribe({ request() {}, cancel() {} });
      actual.onError(new Error('this SSE stream accepts one subscriber; call connectSse again for another'));
      return;
    }
    this.actual = actual;
    actual.onSubscribe(this);
    const terminal = this.pendingTerminal;
    if (terminal !== undefined) {
      this.pendingTerminal = undefined;
      if (terminal.failed) actual.onError(terminal.error);
      else actual.onComplete();
    }
  }

  start(): void {
    if (this.state === 'done') return;
    const signal = this.options.signal;
    if (signal?.aborted) {
      this.finish(true, signal.reason);
      return;
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });
    this.connect();
  }

  request(n: number): void {
    if (this.state === 'done') return;
    this.demand = addDemand(this.demand, n);
    this.inner?.request(n);
    this.updateIdle();
  }

  cancel(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.release();
  }

  private connect(): void {
    const gen = ++this.generation;
    this.state = 'connecting';
    const controller = new AbortController();
    this.controller = controller;
    const o = this.options;
    const headers: Record<string, string> = {
      accept: 'text/event-stream',
      'cache-control': 'no-cache',
      'accept-encoding': 'identity',
      ...o.headers,
    };
    if (this.lastEventId !== '') headers['last-event-id'] = this.lastEventId;
    this.clearIdle();
    this.updateIdle();
    let pending: Promise<SseFetchResponse>;
    try {
      // `compress: true` keeps our `Accept-Encoding: identity` but lets node-fetch gunzip (with
      // Z_SYNC_FLUSH, so events still stream) a server that compresses anyway: raw gzip bytes fed
      // to the SSE parser would end as an empty, "clean" stream.
      pending = o.fetch(o.url.href, { method: o.method, headers, body: o.body, signal: controller.signal, agent: o.agent, compress: true });
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (response) => {
        if (gen !== this.generation) discardBody(response.body);
        else this.onResponse(gen, response);
      },
      (err: unknown) => {
        if (gen === this.generation) this.onConnectionFailure(err);
      },
    );
  }

  private onResponse(gen: number, response: SseFetchResponse): void {
    const { status } = response;
    const contentType = response.headers.get('content-type') ?? undefined;
    if (status === 204) {
      discardBody(response.body);
      this.notifyOpen(response);
      this.finish(false, undefined); // WHATWG §9.2.3: 204 No Content stops reconnection
      return;
    }
    const isStream = contentType !== undefined && contentType.split(';')[0].trim().toLowerCase() === 'text/event-stream';
    if (status >= 200 && status < 300 && isStream) {
      this.openStream(gen, response);
      return;
    }
    const retryable = status === 429 || (status >= 500 && status < 600);
    const retryAfter = retryable ? parseRetryAfter(response.headers.get('retry-after')) : undefined;
    readBodyText(response.body, this.options.maxErrorBodyBytes).then(
      (text) => this.onErrorResponse(gen, new SseHttpError(status, text, contentType, retryAfter), retryable),
      () => this.onErrorResponse(gen, new SseHttpError(status, '', contentType, retryAfter), retryable),
    );
  }

  private onErrorResponse(gen: number, error: SseHttpError, retryable: boolean): void {
    if (gen !== this.generation) return;
    if (retryable) this.onConnectionFailure(error, error.retryAfterMs);
    else this.finish(true, error);
  }

  private openStream(gen: number, response: SseFetchResponse): void {
    this.state = 'streaming';
    this.notifyOpen(response);
    if (gen !== this.generation || this.state !== 'streaming') {
      discardBody(response.body);
      return;
    }
    const seed = this.lastEventId;
    const tap: BodyTap = { body: undefined, ended: false, drainEnded: undefined };
    this.tap = tap;
    const bytes = tapBytes(bodyFlow(response.body), () => this.touch(gen), seed, tap);
    const events = bytes.pipe(
      sseDecode({
        maxLineBytes: this.options.maxLineBytes,
        maxEventBytes: this.options.maxEventBytes,
        // Like the events: nothing of a connection reaches the user once it was released
        // (a reconnect, the terminal event, a cancel), even from the rest of a chunk in hand.
        onRetry: (ms) => {
          if (gen === this.generation) this.serverRetryMs = ms;
        },
        onComment:
          this.options.onComment === undefined
            ? undefined
            : (comment) => {
                if (gen === this.generation) this.options.onComment?.(comment);
              },
        // An `id:`-only block moves the resume point too (§9.2.6 dispatch step 1).
        onLastEventId: (id) => {
          if (gen === this.generation) this.lastEventId = id;
        },
      }),
    );
    events.subscribeWith({
      onSubscribe: (s) => {
        if (gen !== this.generation) {
          s.cancel();
          return;
        }
        this.inner = s;
        if (this.demand > 0) s.request(this.demand);
      },
      onNext: (event) => this.onEvent(gen, event),
      onError: (err) => {
        if (gen !== this.generation) return;
        if (err instanceof SseLimitError) this.finish(true, err);
        else this.onConnectionFailure(err);
      },
      onComplete: () => {
        if (gen !== this.generation) return;
        if (this.options.reconnect) this.onConnectionFailure(undefined);
        else this.finish(false, undefined);
      },
    });
    this.updateIdle();
  }

  private onEvent(gen: number, event: SseEvent): void {
    if (gen !== this.generation || this.state === 'done') return;
    if (this.demand !== Infinity) this.demand--;
    this.lastEventId = event.lastEventId;
    this.failures = 0;
    let terminal = false;
    if (this.options.isTerminal !== undefined) {
      try {
        terminal = this.options.isTerminal(event);
      } catch (err) {
        this.finish(true, err);
        return;
      }
    }
    this.actual?.onNext(event);
    if ((this.state as State) === 'done') return; // the subscriber cancelled in onNext
    if (terminal) this.finish(false, undefined, true);
    else this.updateIdle();
  }

  private touch(gen: number): void {
    if (gen === this.generation) this.idleTimer?.refresh();
  }

  /** A connection failed (network error, EOF when `error` is undefined, idle, retryable status): reconnect or fail. */
  private onConnectionFailure(error: unknown, retryAfterMs?: number): void {
    if (this.state === 'done') return;
    this.closeConnection();
    this.failures++;
    const attempts = this.failures;
    if (!this.options.reconnect || attempts >= this.options.maxAttempts) {
      this.finish(true, asFinalError(error, attempts));
      return;
    }
    if (this.reconnects >= this.options.maxReconnects) {
      this.finish(true, budgetSpentError(error, attempts, this.options.maxReconnects));
      return;
    }
    this.reconnects++;
    const delayMs = this.options.backoffGrowth === 'reconnects' ? this.growingDelayMs(retryAfterMs) : backoffDelayMs({
      attempt: attempts,
      baseMs: this.serverRetryMs ?? this.options.initialDelayMs,
      maxDelayMs: this.options.maxDelayMs,
      random: this.options.random,
      retryAfterMs,
    });
    this.state = 'waiting';
    const reason = error ?? new SseConnectionError('the stream ended before a terminal event', attempts);
    try {
      this.options.onReconnect?.({ attempt: attempts, delayMs, error: reason, lastEventId: this.lastEventId });
    } catch (err) {
      reportDropped(err);
    }
    if (this.state !== 'waiting') return; // the hook cancelled
    // setTimeout fires at once for a delay above 2^31-1 ms (a huge Retry-After): clamp it.
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      if (this.state === 'waiting') this.connect();
    }, Math.min(delayMs, MAX_TIMER_MS));
  }

  /**
   * `backoffGrowth: 'reconnects'`: the window `base * 2^(reconnects-1)` (capped at `maxDelayMs`,
   * but never below the server's `retry:`), the delay uniform in its upper half ("equal jitter"),
   * so it grows with every reconnect; at least `retry:` and `Retry-After`.
   */
  private growingDelayMs(retryAfterMs: number | undefined): number {
    const retryMs = this.serverRetryMs;
    const base = retryMs ?? this.options.initialDelayMs;
    const window = Math.max(Math.min(this.options.maxDelayMs, base * 2 ** Math.min(this.reconnects - 1, 52)), retryMs ?? 0);
    const r = Math.min(Math.max(this.options.random(), 0), 1);
    const delay = Math.floor(window / 2 + (r * window) / 2);
    return Math.max(delay, retryMs ?? 0, retryAfterMs ?? 0);
  }

  private notifyOpen(response: SseFetchResponse): void {
    const info: SseResponseInfo = { status: response.status, headers: response.headers, connection: ++this.connections };
    const first = this.onFirstOpen;
    this.onFirstOpen = undefined;
    try {
      this.options.onOpen?.(info);
      first?.(info);
    } catch (err) {
      reportDropped(err);
    }
  }

  /** Arms the idle timer while bytes are expected: waiting for headers, or streaming with demand. */
  private updateIdle(): void {
    const ms = this.options.idleTimeoutMs;
    if (ms === undefined) return;
    const expecting = this.state === 'connecting' || (this.state === 'streaming' && this.demand > 0);
    if (!expecting) {
      this.clearIdle();
      return;
    }
    if (this.idleTimer !== undefined) return;
    // closeConnection() and connect() clear the timer, so it always belongs to the current connection.
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.state === 'connecting' || this.state === 'streaming') {
        this.onConnectionFailure(new TimeoutError('idle', ms));
      }
    }, ms);
  }

  private clearIdle(): void {
    if (this.idleTimer !== undefined) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
  }

  /** Takes the current connection's handles: later signals from it are ignored. */
  private detachConnection(): { inner: Subscription | undefined; controller: AbortController | undefined; tap: BodyTap | undefined } {
    this.generation++;
    this.clearIdle();
    const taken = { inner: this.inner, controller: this.controller, tap: this.tap };
    this.inner = undefined;
    this.controller = undefined;
    this.tap = undefined;
    return taken;
  }

  /** Releases the current connection (abort): later signals from it are ignored. */
  private closeConnection(): void {
    const { inner, controller } = this.detachConnection();
    inner?.cancel();
    controller?.abort();
  }

  /**
   * Lets the current response end on its own after a terminal event, so its keep-alive socket is
   * reused: the body is read to its end below the decoder and dropped (later signals of the
   * connection are ignored, as after {@link closeConnection}); aborted if still open after
   * {@link DRAIN_AFTER_TERMINAL_MS}.
   */
  private drainConnection(): void {
    const tap = this.tap;
    const body = tap?.body;
    if (tap === undefined || body === undefined) {
      this.closeConnection();
      return;
    }
    const { inner, controller } = this.detachConnection();
    if (tap.ended) {
      // The body already ended (its last events were still queued in the decoder): nothing to read.
      inner?.cancel();
      return;
    }
    const timer = setTimeout(() => {
      tap.drainEnded = noop;
      inner?.cancel();
      controller?.abort();
    }, DRAIN_AFTER_TERMINAL_MS);
    timer.unref();
    // EOF or an error: the socket is back in the pool, or already gone; nothing to abort.
    tap.drainEnded = () => {
      tap.drainEnded = noop;
      clearTimeout(timer);
    };
    body.request(Infinity); // may end the drain at once (chunks parked before a pending end)
  }

  private release(drain = false): void {
    if (drain) this.drainConnection();
    else this.closeConnection();
    if (this.backoffTimer !== undefined) {
      clearTimeout(this.backoffTimer);
      this.backoffTimer = undefined;
    }
    this.options.signal?.removeEventListener('abort', this.onAbort);
  }

  /** Ends the session; `drain`: after a terminal event, let the response end on its own (see {@link drainConnection}). */
  private finish(failed: boolean, error: unknown, drain = false): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.release(drain);
    const actual = this.actual;
    if (actual === undefined) this.pendingTerminal = { failed, error };
    else if (failed) actual.onError(error);
    else actual.onComplete();
    this.onTerminate?.(failed, error);
  }
}

function asFinalError(error: unknown, attempts: number): unknown {
  if (error === undefined) return new SseConnectionError('the stream ended before a terminal event', attempts);
  if (error instanceof SseHttpError || error instanceof TimeoutError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SseConnectionError(`SSE connection failed: ${message}`, attempts, { cause: error });
}

/** The error a session ends with once `maxReconnects` reconnects were made. */
function budgetSpentError(error: unknown, attempts: number, maxReconnects: number): SseConnectionError {
  const last = error === undefined ? 'the stream ended before a terminal event' : error instanceof Error ? error.message : String(error);
  return new SseConnectionError(`SSE reconnect budget of ${maxReconnects} spent; last failure: ${last}`, attempts, { cause: error });
}

const noop = (): void => undefined;

/**
 * One connection's handle below the decoder: the body's own subscription, and, once a terminal
 * event started the drain, where the body's end goes instead of the decoder.
 */
interface BodyTap {
  body: Subscription | undefined;
  /** The body signalled its end (EOF or error). */
  ended: boolean;
  /** Set while draining: chunks are dropped and the body's EOF or error is reported here only. */
  drainEnded: (() => void) | undefined;
}

/**
 * Reports each chunk (idle timer) and, on a reconnect, seeds the new parser with the last event
 * ID: `id: <last>\n` is prepended to the first chunk, after stripping a leading BOM (which the
 * parser only recognises at the very start). So events of the new connection carry the resumed
 * ID until the server sends another, as browsers' EventSource does. One chunk in, one chunk out,
 * until a drain starts (`tap.drainEnded` set): then chunks are dropped and the end goes to the tap.
 */
function tapBytes(source: Flow<Uint8Array>, onChunk: () => void, seedId: string, tap: BodyTap): Flow<Uint8Array> {
  return new Flow<Uint8Array>((actual, context) => {
    let head: Buffer | undefined = seedId === '' ? undefined : Buffer.alloc(0);
    const seed = Buffer.from(`id: ${seedId}\n`);
    source.subscribeWith(
      {
        onSubscribe: (s) => {
          tap.body = s;
          actual.onSubscribe(s);
        },
        onNext: (chunk) => {
          if (tap.drainEnded !== undefined) return; // after the terminal event: read and dropped
          onChunk();
          if (head === undefined) {
            actual.onNext(chunk);
            return;
          }
          head = Buffer.concat([head, chunk]);
          const n = Math.min(head.length, BOM.length);
          let isBomPrefix = true;
          for (let i = 0; i < n; i++) if (head[i] !== BOM[i]) isBomPrefix = false;
          if (isBomPrefix && head.length < BOM.length) {
            actual.onNext(new Uint8Array(0)); // wait for the rest of a possible BOM
            return;
          }
          const rest = isBomPrefix ? head.subarray(BOM.length) : head;
          head = undefined;
          actual.onNext(Buffer.concat([seed, rest]));
        },
        onError: (e) => {
          tap.ended = true;
          if (tap.drainEnded !== undefined) tap.drainEnded();
          else actual.onError(e);
        },
        onComplete: () => {
          tap.ended = true;
          if (tap.drainEnded !== undefined) tap.drainEnded();
          else actual.onComplete();
        },
      },
      context,
    );
  });
}
