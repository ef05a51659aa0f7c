import type http from 'node:http';
import type { SseEvent } from '../sse/codec/parser';
import { DEFAULT_CONNECT_TIMEOUT_MS, type FollowRedirects } from '../http/call';
import { fetchTransport, type SseFetch } from './fetch';
import { httpTransport, type SseTransport } from './transport';
import type { AbortSignalLike } from '../http/abort-signal-like';

/** The response of a connection that opened (status 200, `text/event-stream`), or a 204. */
export interface SseResponseInfo {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** 1 for the first connection, then one more per reconnect that reached a response. */
  readonly connection: number;
}

/** Passed to {@link ConnectSseOptions.onReconnect} each time a reconnect is scheduled. */
export interface SseReconnectInfo {
  /** Failed attempts in a row, counting this failure (reset by any delivered event). */
  readonly attempt: number;
  /** The wait before the next attempt, in ms (jittered; at least `Retry-After` when sent). */
  readonly delayMs: number;
  /** Why: a network error, `TimeoutError` (idle, connect, first byte), `SseHttpError` (429, 5xx), or an EOF `SseConnectionError`. */
  readonly error: unknown;
  /** The `Last-Event-ID` the next request will carry (`""`: none). */
  readonly lastEventId: string;
}

/** Passed to {@link ConnectSseOptions.onConnecting} as each request is about to be sent. */
export interface SseConnectingInfo {
  /** 1 for the first request, then one more per reconnect attempt that starts. */
  readonly request: number;
  /** The `Last-Event-ID` this request carries (`""`: none). */
  readonly lastEventId: string;
}

/** Options for `connectSse`. All durations are in ms, sizes in bytes. */
export interface ConnectSseOptions {
  /** HTTP method (default `'GET'`). */
  method?: string | undefined;
  /** Extra request headers; `Accept`, `Cache-Control`, `Accept-Encoding` and `Last-Event-ID` are set by the client unless given here. */
  headers?: Record<string, string> | undefined;
  /** Request body, re-sent on every reconnect (so a string or bytes, not a stream). */
  body?: string | Uint8Array<ArrayBuffer> | undefined;
  /** Aborting it ends the flow with `error(signal.reason)` and releases the connection. An `AbortSignal`, or anything with its `aborted`, `reason` and `'abort'` listeners. */
  signal?: AbortSignalLike | undefined;
  /**
   * Aborting it starts no further connection (default: none): a reconnect wait in progress ends
   * at once, and the flow fails with the last failed connection's error, as when `maxAttempts`
   * ran out (`SseHttpError` with its status and `retryAfterMs`, `TimeoutError`, else an
   * `SseConnectionError` with the failure as `cause`). A connection already open is not touched.
   * E.g. a server's drain: a stream waiting out a long `Retry-After` answers now.
   */
  stopReconnects?: AbortSignalLike | undefined;
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
   * below the server's `retry:` (window `initialDelayMs * 2^(n-1)`, delay uniform in its upper
   * half, at least `retry:` and `Retry-After`).
   */
  backoffGrowth?: 'failures' | 'reconnects' | undefined;
  /**
   * Base of the exponential backoff (default 1000 ms); with `backoffGrowth: 'failures'` a server's
   * larger `retry:` replaces it, a smaller one (even `retry: 0`) does not.
   */
  initialDelayMs?: number | undefined;
  /** Ceiling of the backoff window (default 30000 ms). A `Retry-After` may exceed it. */
  maxDelayMs?: number | undefined;
  /**
   * Ceiling of the server's `retry:` reconnection time, ms (default: none, as EventSource): a
   * larger `retry:` counts as this much, so a server cannot hold a reconnect off for hours.
   */
  maxRetryMs?: number | undefined;
  /** No bytes at all (heartbeats included) for this long while waiting for headers or while events are requested = network error (default: off). */
  idleTimeoutMs?: number | undefined;
  /**
   * A new TCP (and TLS) connection must be established within this, per attempt (default 10000 ms,
   * 0: off); passing it is a network error (`TimeoutError`, `kind: 'connect'`). Not applied with a
   * caller's own `fetch`.
   */
  connectTimeoutMs?: number | undefined;
  /**
   * The first body byte must arrive within this of each attempt's request (default 0: off, since
   * a feed may be quiet for long); passing it is a network error (`TimeoutError`, `kind: 'first'`).
   * Not applied with a caller's own `fetch`.
   */
  firstByteTimeoutMs?: number | undefined;
  /**
   * Follow a 3xx answer to the address it names (default `true`, as EventSource). `false`: a
   * 3xx fails the stream with `SseHttpError`. `'same-origin'`: only a redirect that stays on the
   * URL's scheme, host and port is followed. A redirect loop (past 20), or one off the origin
   * with `'same-origin'`, fails the stream with `UpstreamRedirectError`, not retried. A caller's
   * own `fetch` follows its own rules.
   */
  followRedirects?: FollowRedirects | undefined;
  /**
   * True for the event that ends the stream cleanly (e.g. OpenAI's `data: [DONE]`): it is delivered, then the flow
   * completes at once without reconnecting. The response body is then read to its end and dropped, so the keep-alive
   * socket goes back to the agent's pool; a response still open 1000 ms after the terminal event is aborted.
   */
  isTerminal?: ((event: SseEvent) => boolean) | undefined;
  /**
   * A fetch to use instead of tidegate's HTTP stack (node-fetch 2 with connect and first-byte
   * timeouts and sized reads): native fetch / undici (WHATWG body) or node-fetch. The timeouts
   * above do not apply to it; `idleTimeoutMs` does.
   */
  fetch?: SseFetch | undefined;
  /** The HTTP agent (default `defaultSseAgent(url)`: the upstream keep-alive pool of tidegate's HTTP stack). */
  agent?: http.Agent | ((url: URL) => http.Agent) | undefined;
  /** Uniform random numbers in [0, 1) for the jitter (default `Math.random`; inject for tests). */
  random?: (() => number) | undefined;
  /** Largest SSE line, bytes (default 1 MiB); exceeding it fails the flow with `SseLimitError`, no reconnect. */
  maxLineBytes?: number | undefined;
  /** Largest SSE event data, bytes (default 1 MiB); exceeding it fails the flow with `SseLimitError`, no reconnect. */
  maxEventBytes?: number | undefined;
  /**
   * Called once per subscription with a count of the bytes the parser of the current connection
   * holds (`SseParser.heldBytes`: the unfinished line and event; 0 between connections), for a
   * byte budget to count them (`ByteBudget.attachExternal`).
   */
  attachHeld?: ((heldBytes: () => number) => void) | undefined;
  /** How much of an error response body is kept in `SseHttpError.body` (default 64 KiB). */
  maxErrorBodyBytes?: number | undefined;
  /**
   * Resume a tidegate stream where it was started (default `false`): when the first response
   * names a stream (`x-tidegate-stream-id`, a route with `resume`), every reconnect is a `GET` of
   * `/v1/streams/{id}` on the same origin with `Last-Event-ID`, instead of sending the request
   * (e.g. a `POST` to the model) again. The resumed stream replays the events after the last one
   * delivered, then follows live (docs/resume.md); a 410 (window passed) or 404 (expired) fails
   * the flow with `SseHttpError`.
   */
  resumeTidegateStream?: boolean | undefined;
  /**
   * Called as each request is about to be sent: the first, then each reconnect once its wait
   * ended. A reconnect that never starts (the signal aborted, `stopReconnects`) is not reported,
   * so it counts the requests the server got. A hook that aborts the signal sends nothing.
   */
  onConnecting?: ((info: SseConnectingInfo) => void) | undefined;
  /**
   * Asked with each failure that would be reconnected (as Reactor's `Retry.filter`): `false` ends
   * the flow with that failure instead, as when `maxAttempts` ran out (default: every failure
   * reconnects). The failure is what `onReconnect` would get as `error`; a filter that throws ends
   * the flow with what it threw. E.g. not retrying a 500: `(e) => !(e instanceof SseHttpError &&
   * e.status === 500)`.
   */
  reconnectFilter?: ((error: unknown) => boolean) | undefined;
  /** Called when a connection opened (before any of its events), or on a 204. */
  onOpen?: ((response: SseResponseInfo) => void) | undefined;
  /** Called when a reconnect is scheduled. */
  onReconnect?: ((info: SseReconnectInfo) => void) | undefined;
  /** Called for each comment line (`: ping` heartbeats), text after the colon. */
  onComment?: ((comment: string) => void) | undefined;
}

/** @internal Options after defaults and validation. */
export interface ResolvedSseOptions {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer> | undefined;
  signal: AbortSignalLike | undefined;
  stopReconnects: AbortSignalLike | undefined;
  lastEventId: string;
  reconnect: boolean;
  maxAttempts: number;
  maxReconnects: number;
  backoffGrowth: 'failures' | 'reconnects';
  initialDelayMs: number;
  maxDelayMs: number;
  maxRetryMs: number;
  idleTimeoutMs: number | undefined;
  isTerminal: ((event: SseEvent) => boolean) | undefined;
  /** How each attempt is sent: tidegate's HTTP stack, or the caller's `fetch`. */
  transport: SseTransport;
  random: () => number;
  maxLineBytes: number | undefined;
  maxEventBytes: number | undefined;
  attachHeld: ((heldBytes: () => number) => void) | undefined;
  maxErrorBodyBytes: number;
  resumeTidegateStream: boolean;
  reconnectFilter: ((error: unknown) => boolean) | undefined;
  /** `idleTimeoutMs` also times the wait for a response's headers (false: the transport's first-byte deadline alone does). */
  idleBeforeAnswer: boolean;
  onConnecting: ((info: SseConnectingInfo) => void) | undefined;
  onOpen: ((response: SseResponseInfo) => void) | undefined;
  onReconnect: ((info: SseReconnectInfo) => void) | undefined;
  onComment: ((comment: string) => void) | undefined;
}

/** @internal How a gateway route's stream differs from a user's `connectSse`. */
export interface RouteSseOptions {
  /** The route the stream serves, named in the HTTP stack's network errors (never the URL). */
  route?: string | undefined;
  /** `false`: `idleTimeoutMs` starts at the response, as on every route (default `true`). */
  idleBeforeAnswer?: boolean | undefined;
}

/** @internal Applies defaults; throws `RangeError` / `TypeError` for invalid options. */
export function resolveOptions(url: string | URL, options: ConnectSseOptions, internal: RouteSseOptions = {}): ResolvedSseOptions {
  const parsed = new URL(String(url));
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
  if (options.maxRetryMs !== undefined && options.maxRetryMs !== Infinity) nonNegative('maxRetryMs', options.maxRetryMs);
  nonNegative('connectTimeoutMs', options.connectTimeoutMs);
  nonNegative('firstByteTimeoutMs', options.firstByteTimeoutMs);
  if (options.idleTimeoutMs !== undefined && !(Number.isFinite(options.idleTimeoutMs) && options.idleTimeoutMs > 0)) {
    throw new RangeError(`connectSse: idleTimeoutMs must be a finite number > 0, got ${options.idleTimeoutMs}`);
  }
  const agentOption = options.agent;
  const agent = typeof agentOption === 'function' ? agentOption(parsed) : agentOption;
  const transport =
    options.fetch === undefined
      ? httpTransport({
          agent,
          connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
          firstByteTimeoutMs: options.firstByteTimeoutMs ?? 0,
          idleTimeoutMs: options.idleTimeoutMs,
          followRedirects: options.followRedirects ?? true,
          route: internal.route,
        })
      : // Only node-fetch reads `agent`; a caller-supplied fetch gets one only when asked for.
        fetchTransport(options.fetch, agent);
  const lastEventId = options.lastEventId ?? '';
  if (/[\r\n\0]/.test(lastEventId)) throw new TypeError('connectSse: lastEventId must not contain CR, LF or NUL');
  return {
    url: parsed,
    method: options.method ?? 'GET',
    headers: { ...options.headers },
    body: options.body,
    signal: options.signal,
    stopReconnects: options.stopReconnects,
    lastEventId,
    reconnect: options.reconnect ?? true,
    maxAttempts,
    maxReconnects,
    backoffGrowth,
    initialDelayMs: options.initialDelayMs ?? 1000,
    maxDelayMs: options.maxDelayMs ?? 30_000,
    maxRetryMs: options.maxRetryMs ?? Infinity,
    idleTimeoutMs: options.idleTimeoutMs,
    isTerminal: options.isTerminal,
    transport,
    random: options.random ?? Math.random,
    maxLineBytes: options.maxLineBytes,
    maxEventBytes: options.maxEventBytes,
    attachHeld: options.attachHeld,
    maxErrorBodyBytes: options.maxErrorBodyBytes ?? 64 * 1024,
    resumeTidegateStream: options.resumeTidegateStream ?? false,
    reconnectFilter: options.reconnectFilter,
    idleBeforeAnswer: internal.idleBeforeAnswer ?? true,
    onConnecting: options.onConnecting,
    onOpen: options.onOpen,
    onReconnect: options.onReconnect,
    onComment: options.onComment,
  };
}

