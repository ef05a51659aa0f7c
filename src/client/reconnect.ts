import { SseConnectionError, SseHttpError, TimeoutError } from '../errors';
import { backoffDelayMs } from '../http/backoff';
import type { ResolvedSseOptions } from './options';
import type { SseRequest } from './transport';

/** What to do after a failed connection: wait `delayMs` and connect again, or end with `error`. */
export type ReconnectStep = { readonly retry: true; readonly attempt: number; readonly delayMs: number } | { readonly retry: false; readonly error: unknown };

/**
 * @internal The reconnection rules of one SSE stream (WHATWG HTML §9.2.3 "reestablish the
 * connection", with a backoff and budgets on top): what each attempt sends, how long to wait
 * after a failure, and when to give up. The session owns the connections; this owns the counts.
 *
 * One place decides the next attempt's request ({@link request}), so a stream that is resumed
 * elsewhere than it started (e.g. a POST that started it, a GET that resumes it) changes only
 * this module.
 */
export class Reconnection {
  /** Failed attempts in a row (reset by a delivered event). */
  private failures = 0;
  /** Reconnects scheduled over the stream's life (not reset by events). */
  private reconnects = 0;
  /** The server's reconnection time (`retry:`), ms, once it sent one. */
  private serverRetryMs: number | undefined;
  /** The tidegate stream the first response named (`resumeTidegateStream`). */
  private tidegateStreamId: string | undefined;

  constructor(private readonly options: ResolvedSseOptions) {}

  /**
   * The request of the next attempt: the configured one, with `Accept: text/event-stream`,
   * `Cache-Control: no-cache` and `Accept-Encoding: identity` unless the caller set them, and
   * `Last-Event-ID` when there is one (§9.2.3).
   */
  request(lastEventId: string): SseRequest {
    const o = this.options;
    const headers: Record<string, string> = { accept: 'text/event-stream', 'cache-control': 'no-cache', 'accept-encoding': 'identity', ...o.headers };
    // §9.2.3: the last event ID string "encoded as UTF-8". Node writes header values as Latin-1
    // (and refuses characters above U+00FF), so the UTF-8 bytes go as a Latin-1 string.
    if (lastEventId !== '') headers['last-event-id'] = Buffer.from(lastEventId, 'utf8').toString('latin1');
    if (this.tidegateStreamId !== undefined) {
      // Resumed where tidegate keeps it: a GET of the stream, its credentials kept, no body.
      for (const name of Object.keys(headers)) if (/^content-(type|length|encoding)$/i.test(name)) delete headers[name];
      return { url: new URL(`/v1/streams/${encodeURIComponent(this.tidegateStreamId)}`, o.url), method: 'GET', headers, body: undefined };
    }
    return { url: o.url, method: o.method, headers, body: o.body };
  }

  /** A connection opened: with `resumeTidegateStream`, the first one names the stream later attempts resume. */
  onOpen(headers: { get(name: string): string | null }): void {
    if (!this.options.resumeTidegateStream || this.tidegateStreamId !== undefined) return;
    const id = headers.get('x-tidegate-stream-id');
    if (id !== null && /^[0-9a-f]{32}$/.test(id)) this.tidegateStreamId = id;
  }

  /** The error a stream ends with when `stopReconnects` ends its wait after `error` (undefined: an EOF): as if attempts ran out. */
  stoppedError(error: unknown): unknown {
    return finalError(error, this.failures);
  }

  /**
   * The server sent `retry:` (ms): the stream's reconnection time from now on, at most `maxRetryMs`
   * and kept finite (a field of 309 digits parses to `Infinity`, and `0 * Infinity` jitter would be
   * a `NaN` delay, which a timer fires at once).
   */
  onRetry(ms: number): void {
    this.serverRetryMs = Math.min(ms, this.options.maxRetryMs, Number.MAX_SAFE_INTEGER);
  }

  /** An event was delivered: failures in a row start again from zero. */
  onEvent(): void {
    this.failures = 0;
  }

  /**
   * A connection failed (`error` undefined: an EOF without a terminal event): reconnect after a
   * delay, or end with the error to signal (reconnect off, attempts in a row or reconnects in
   * all spent).
   */
  onFailure(error: unknown, retryAfterMs: number | undefined): ReconnectStep {
    this.failures++;
    const attempt = this.failures;
    if (!this.options.reconnect || attempt >= this.options.maxAttempts || this.options.stopReconnects?.aborted) return { retry: false, error: finalError(error, attempt) };
    const filter = this.options.reconnectFilter;
    if (filter !== undefined) {
      try {
        if (!filter(error ?? endedError(attempt))) return { retry: false, error: finalError(error, attempt) };
      } catch (thrown) {
        return { retry: false, error: thrown };
      }
      // The filter may have stopped reconnects itself.
      if (this.options.stopReconnects?.aborted) return { retry: false, error: finalError(error, attempt) };
    }
    if (this.reconnects >= this.options.maxReconnects) return { retry: false, error: budgetSpentError(error, attempt, this.options.maxReconnects) };
    this.reconnects++;
    const delayMs = this.options.backoffGrowth === 'reconnects' ? this.growingDelayMs(retryAfterMs) : this.delayMs(attempt, retryAfterMs);
    return { retry: true, attempt, delayMs };
  }

  /**
   * `backoffGrowth: 'failures'`: the server's reconnection time (`retry:`, §9.2.3 "wait a delay
   * equal to the reconnection time"; 0 until it sent one), then "optionally, wait some more": full
   * jitter over `min(maxDelayMs, base * 2^(attempt-1))` with `base` the larger of `retry:` and
   * `initialDelayMs`, so a `retry: 0` cannot collapse the backoff into a reconnect loop.
   * `maxDelayMs` bounds the jitter, never the server's `retry:`; a `Retry-After` is a floor.
   */
  private delayMs(attempt: number, retryAfterMs: number | undefined): number {
    const retryMs = this.serverRetryMs ?? 0;
    const baseMs = Math.max(retryMs, this.options.initialDelayMs);
    const jitter = backoffDelayMs({ attempt, baseMs, maxDelayMs: this.options.maxDelayMs, random: this.options.random });
    return Math.max(retryMs + jitter, retryAfterMs ?? 0);
  }

  /**
   * `backoffGrowth: 'reconnects'`: the window `initialDelayMs * 2^(reconnects-1)` (capped at
   * `maxDelayMs`, but never below the server's `retry:`), the delay uniform in its upper half
   * ("equal jitter"), so it grows with every reconnect; at least `retry:` and `Retry-After`. The
   * server's `retry:` is a floor only: a `retry: 0` cannot stop the growth.
   */
  private growingDelayMs(retryAfterMs: number | undefined): number {
    const retryMs = this.serverRetryMs;
    const base = this.options.initialDelayMs;
    const window = Math.max(Math.min(this.options.maxDelayMs, base * 2 ** Math.min(this.reconnects - 1, 52)), retryMs ?? 0);
    const r = Math.min(Math.max(this.options.random(), 0), 1);
    const delay = Math.floor(window / 2 + (r * window) / 2);
    return Math.max(delay, retryMs ?? 0, retryAfterMs ?? 0);
  }
}

/** The failure of a connection that ended without a terminal event (an EOF), as hooks see it. */
export function endedError(attempts: number): SseConnectionError {
  return new SseConnectionError('the stream ended before a terminal event', attempts);
}

/** The error a stream ends with when it is not reconnected: typed as the failure, or an {@link SseConnectionError} with it as `cause`. */
function finalError(error: unknown, attempts: number): unknown {
  if (error === undefined) return endedError(attempts);
  if (error instanceof SseHttpError || error instanceof TimeoutError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SseConnectionError(`SSE connection failed: ${message}`, attempts, { cause: error });
}

/** The error a stream ends with once `maxReconnects` reconnects were made. */
function budgetSpentError(error: unknown, attempts: number, maxReconnects: number): SseConnectionError {
  const last = error === undefined ? 'the stream ended before a terminal event' : error instanceof Error ? error.message : String(error);
  return new SseConnectionError(`SSE reconnect budget of ${maxReconnects} spent; last failure: ${last}`, attempts, { cause: error });
}
