import { z } from 'zod';
import { int, ms } from './fields';

/** Stream policy fields (bytes, ms); each route may override any of them. */
export const policyShape = {
  /** Events the bridge requests per batch. */
  prefetch: int(1).max(4096),
  /** Per-stream byte budget: chain buffers + bridge + `res.writableLength`, bytes. */
  maxBufferedBytes: int(1024),
  /** `pause`: demand pauses the upstream. `terminate`: read the upstream at full speed into the budget, end with ERR_TIDEGATE_OVERFLOW when spent. */
  overflow: z.enum(['pause', 'terminate']),
  /** End a stream whose client accepted nothing for this long, ms (0 disables). */
  stallTimeoutMs: ms(0),
  /** `: ping` after this much silence, ms (0 disables). */
  heartbeatMs: ms(0),
  /**
   * Most bytes the kernel keeps unsent for a client's socket (`TCP_NOTSENT_LOWAT`), bytes; 0
   * leaves the kernel's default (MBs). Unset: 16384, at most a quarter of `maxBufferedBytes`.
   */
  kernelUnsentBytes: int(0).optional(),
  /**
   * Streaming requests: commit `200 text/event-stream` and start `: ping` heartbeats when the
   * upstream's status line has not arrived this long after the request, ms (0 = off: headers wait
   * for the upstream, so its errors keep their HTTP status). After an early commit an upstream
   * error (a 429, a 5xx after retries) reaches the client as the provider's SSE error event.
   */
  earlyCommitMs: ms(0),
  /** Max bytes of one upstream SSE event. */
  maxEventBytes: int(1024),
  /** `limitRate(n)` on the events: at most n requested upstream at once (0 = off). */
  limitRate: int(0),
  /**
   * `bytes`: forward each upstream event's own bytes in frames, decoding only what the provider
   * adapter must see (used when the route has no `limitRate` and no user policy). `events`:
   * decode and re-encode every event.
   */
  relay: z.enum(['bytes', 'events']),
};

/** Stream policy defaults. */
export const DEFAULT_POLICY: StreamPolicy = {
  prefetch: 16,
  maxBufferedBytes: 256 * 1024,
  overflow: 'pause',
  stallTimeoutMs: 30_000,
  heartbeatMs: 15_000,
  kernelUnsentBytes: undefined,
  earlyCommitMs: 0,
  maxEventBytes: 1024 * 1024,
  limitRate: 0,
  relay: 'bytes',
};

/** Upstream timeouts, ms (0 disables one). */
export const timeoutsShape = {
  /** A new upstream connection must be up within this. */
  connectMs: ms(0),
  /** The upstream's first body byte must arrive within this of the request (models think). */
  firstByteMs: ms(0),
  /** Longest silence between upstream chunks while the client reads. */
  idleMs: ms(0),
  /** Longest life of one request, from its arrival. */
  totalMs: ms(0),
};

/** Timeout defaults, ms. */
export const DEFAULT_TIMEOUTS: UpstreamTimeouts = { connectMs: 10_000, firstByteMs: 60_000, idleMs: 120_000, totalMs: 600_000 };

export const retryShape = {
  /** Attempts in all, the first included (1 = no retry). */
  maxAttempts: int(1).max(10),
  /** First backoff ceiling, ms (doubles per attempt, full jitter). */
  baseDelayMs: ms(0),
  /** Largest backoff, ms. */
  maxDelayMs: ms(0),
  /** A longer `Retry-After` is not waited for, ms. */
  maxRetryAfterMs: ms(0),
  /**
   * Resumable routes: reconnects of one stream in all (delivered events do not reset it); the
   * delay grows with each (from `baseDelayMs`, never below the upstream's `retry:`). Once spent
   * the stream ends with an `ERR_TIDEGATE_UPSTREAM_RESET` error event. 0: never reconnect.
   */
  maxReconnects: int(0).max(1000),
};

/** Retry defaults. */
export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 8000, maxRetryAfterMs: 30_000, maxReconnects: 10 };

/** Stream policy of one route, resolved. */
export type StreamPolicy = { [K in keyof typeof policyShape]: z.infer<(typeof policyShape)[K]> };
/** Upstream timeouts of one route, resolved, ms. */
export type UpstreamTimeouts = { [K in keyof typeof timeoutsShape]: number };
/** Retry settings of one route, resolved. */
export type RetrySettings = { [K in keyof typeof retryShape]: number };
