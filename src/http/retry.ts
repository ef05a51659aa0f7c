import { TimeoutError } from '../errors';
import { backoffDelayMs } from './backoff';
import { UpstreamBodyTooLargeError, UpstreamHttpError, UpstreamResetError } from './errors';
import type { AbortSignalLike } from './abort-signal-like';

/** When and how often an upstream call is retried. Delays in ms. */
export interface RetryPolicy {
  /** Most attempts in all, first included (default 3; 1 = never retry). */
  maxAttempts?: number | undefined;
  /** First backoff ceiling (default 250 ms); attempt n waits a random time in [0, min(maxDelayMs, baseDelayMs · 2^(n-1))] ("full jitter"). */
  baseDelayMs?: number | undefined;
  /** Largest backoff (default 8000 ms). */
  maxDelayMs?: number | undefined;
  /** A `Retry-After` longer than this is not waited for: the error goes to the client (default 30000 ms). */
  maxRetryAfterMs?: number | undefined;
  /** Statuses worth another attempt (default 429, 502, 503). Other 4xx never are. */
  retryStatuses?: readonly number[] | undefined;
}

/** What {@link withRetries} reports before each new attempt. */
export interface RetryNotice {
  /** The attempt about to start, 2 for the first retry. */
  attempt: number;
  /** Why: the error of the previous attempt. */
  error: unknown;
  /** The wait before it, ms. */
  delayMs: number;
}

const DEFAULTS = {
  maxAttempts: 3,
  baseDelayMs: 250,
  maxDelayMs: 8000,
  maxRetryAfterMs: 30_000,
  retryStatuses: [429, 502, 503] as readonly number[],
};

/**
 * The wait before another attempt, or `undefined` when `error` must not be retried. Only what
 * failed before the upstream answered, or answered with a retryable status, is retried:
 *
 * | error | retried |
 * | --- | --- |
 * | {@link UpstreamResetError} before the status line, connect timeout | yes |
 * | an answer Node's HTTP parser refused (`HPE_*`, e.g. headers too large) | never |
 * | HTTP status in `retryStatuses` (its body read or too large) | yes |
 * | any status 2xx (200 JSON to a stream request, body too large, body broken) | never |
 * | other 4xx/5xx, {@link UpstreamResetError} after a status line, other errors | no |
 *
 * A 2xx answer may already be billed upstream, so one client request makes one upstream request
 * once the upstream answered 2xx. A `Retry-After` is honoured as given (up to `maxRetryAfterMs`),
 * otherwise exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
 * And Jitter").
 *
 * @param attempt the attempt that failed, 1-based.
 * @param random a source in [0, 1) (tests pass a fixed one).
 */
export function retryDelayMs(error: unknown, attempt: number, policy: RetryPolicy = {}, random: () => number = Math.random): number | undefined {
  // Field by field: an explicit `undefined` in the policy means "the default", not "none".
  const p = {
    maxAttempts: policy.maxAttempts ?? DEFAULTS.maxAttempts,
    baseDelayMs: policy.baseDelayMs ?? DEFAULTS.baseDelayMs,
    maxDelayMs: policy.maxDelayMs ?? DEFAULTS.maxDelayMs,
    maxRetryAfterMs: policy.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
    retryStatuses: policy.retryStatuses ?? DEFAULTS.retryStatuses,
  };
  if (attempt >= p.maxAttempts) return undefined;
  let retryAfter: number | undefined;
  if (error instanceof UpstreamHttpError) {
    if (!retryableStatus(error.status, p.retryStatuses)) return undefined;
    retryAfter = error.retryAfterMs;
  } else if (error instanceof UpstreamBodyTooLargeError) {
    if (!retryableStatus(error.upstreamStatus, p.retryStatuses)) return undefined;
  } else if (error instanceof UpstreamResetError) {
    // An answer the HTTP parser refused was still an answer; a status line may be a retryable one.
    if (error.status === undefined ? error.answered : !retryableStatus(error.status, p.retryStatuses)) return undefined;
  } else if (!(error instanceof TimeoutError && error.kind === 'connect')) {
    return undefined;
  }
  if (retryAfter !== undefined) return retryAfter <= p.maxRetryAfterMs ? retryAfter : undefined;
  return backoffDelayMs({ attempt, baseMs: p.baseDelayMs, maxDelayMs: p.maxDelayMs, random });
}

/** A status worth another attempt: in `retryStatuses`, and never a 1xx–3xx (the upstream answered). */
function retryableStatus(status: number, retryStatuses: readonly number[]): boolean {
  return status >= 400 && retryStatuses.includes(status);
}

/**
 * Runs `attempt` until it resolves, retrying as {@link retryDelayMs} allows. Use it only for
 * work that has not reached the client yet: the gateway wraps the call that ends at the
 * upstream's status line, so nothing after the first byte is ever retried.
 *
 * `stopRetries` (the gateway's drain) starts no further attempt once aborted: a wait in progress
 * ends at once and the last attempt's error is thrown, as if attempts had run out, so a client
 * is not held through a shutdown's grace for a `Retry-After`. `onRetry` reports each new attempt
 * as it starts, after its wait.
 *
 * Errors: the last attempt's error; the signal's reason when aborted during a wait.
 */
export async function withRetries<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy = {},
  options: {
    signal?: AbortSignalLike | undefined;
    stopRetries?: AbortSignalLike | undefined;
    onRetry?: ((notice: RetryNotice) => void) | undefined;
    random?: (() => number) | undefined;
  } = {},
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason ?? err;
      const delayMs = options.stopRetries?.aborted ? undefined : retryDelayMs(err, n, policy, options.random);
      if (delayMs === undefined) throw err;
      if (!(await wait(delayMs, options.signal, options.stopRetries))) throw err;
      options.onRetry?.({ attempt: n + 1, error: err, delayMs });
    }
  }
}

/**
 * Waits `ms`: resolves `true` when it passed, `false` as soon as `stop` aborts; rejects with
 * `signal`'s reason as soon as it aborts.
 */
function wait(ms: number, signal: AbortSignalLike | undefined, stop: AbortSignalLike | undefined): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const settle = (outcome: () => void): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      stop?.removeEventListener('abort', onStop);
      outcome();
    };
    const onAbort = (): void => settle(() => reject(signal?.reason));
    const onStop = (): void => settle(() => resolve(false));
    const timer = setTimeout(() => settle(() => resolve(true)), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    stop?.addEventListener('abort', onStop, { once: true });
  });
}

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP date) into ms, at most
 * `Number.MAX_SAFE_INTEGER` (a header of 306 digits would be `Infinity`); `undefined` when absent
 * or invalid. The one parser of the header: upstream retries and `connectSse` use it.
 */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Math.min(Number(value.trim()) * 1000, Number.MAX_SAFE_INTEGER);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
