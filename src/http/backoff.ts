/** Inputs of {@link backoffDelayMs}. */
export interface BackoffInput {
  /** Failed attempts in a row so far, counting the one just failed (1 for the first retry). */
  attempt: number;
  /** The base delay in ms: the first window's width. */
  baseMs: number;
  /** The ceiling of the exponential window in ms. */
  maxDelayMs: number;
  /** A uniform random number in [0, 1). */
  random: () => number;
  /** A server-mandated minimum wait in ms (`Retry-After` of a 429/503), if any. */
  retryAfterMs?: number | undefined;
}

/**
 * The delay before a retry, in ms: exponential backoff with FULL jitter (AWS Architecture Blog,
 * "Exponential Backoff and Jitter", 2015): `random() * min(maxDelayMs, baseMs * 2^(attempt-1))`,
 * so clients dropped at the same instant (a deploy) spread their retries over the whole window
 * instead of arriving in lockstep. A `Retry-After` is a floor: the delay is never shorter.
 *
 * The one backoff of tidegate: the upstream retries (`retryDelayMs`) and the SSE client's
 * reconnects (`connectSse`, which adds it on top of the server's reconnection time) both use it.
 *
 * @example
 * backoffDelayMs({ attempt: 1, baseMs: 50, maxDelayMs: 30_000, random: Math.random }); // in [0, 50)
 */
export function backoffDelayMs(input: BackoffInput): number {
  const exponent = Math.min(Math.max(input.attempt - 1, 0), 52);
  const window = Math.min(input.maxDelayMs, input.baseMs * 2 ** exponent);
  const r = Math.min(Math.max(input.random(), 0), 1);
  const jittered = Math.floor(r * window);
  return input.retryAfterMs === undefined ? jittered : Math.max(input.retryAfterMs, jittered);
}
