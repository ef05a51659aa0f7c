import type { Request, Response } from 'express';
import { ShutdownError, StalledError, TimeoutError } from '../../errors';
import { awaitDelivery } from '../../express/bridge/await-delivery';
import type { ProviderAdapter, TokenUsage } from '../../providers/types';
import { scrubbingAdapter } from '../../providers/scrub';
import type { UpstreamRedaction } from '../../http/redact';
import type { RetryNotice } from '../../http/retry';
import { CallSignal } from '../../http/node-hooks';
import { watchAbort } from '../abort-watch';
import type { ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import type { GatewayMetrics } from '../metrics';
import { newStreamId } from '../resume/ids';
import type { EarlyCommit } from './early-commit';
import { ClientClosedError, upstreamOutcome, type RelayOutcome } from './outcome';
import type { AbortSignalLike } from '../../http/abort-signal-like';

/**
 * What a stream's signal is aborted with when it closes normally: by then only listeners being
 * released see it. One object for all streams (`abort(undefined)` makes a `DOMException`, with
 * its stack, per stream).
 */
const CLOSED = new DOMException('the stream is over', 'AbortError');

/** The collaborators a stream takes from its route (see `RelayOptions`). */
export interface StreamEnvironment {
  route: ResolvedRoute & { url: string };
  adapter: ProviderAdapter;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Aborted (with a ShutdownError) when the shutdown grace period is over. */
  shutdown: AbortSignal;
  /** Aborted when the drain starts: a stream waiting to retry its upstream then answers with the last attempt's error. */
  draining?: AbortSignalLike | undefined;
  /** Called with the stream's abort function while it runs; the return value unregisters it. */
  register(abort: (reason: unknown) => void): () => void;
}

/**
 * One relayed request's lifetime, whichever way it goes: its id and clock, the one abort signal
 * that ends it from the gateway's side (total timeout, shutdown, a client that leaves before
 * the headers), its upstream attempts, its usage, and its single log line and metrics at the end.
 * {@link close} releases every listener and timer it set.
 */
export class StreamContext {
  /** 128 random bits (hex): also what a resumable stream's clients resume by, so never guessable. */
  readonly streamId = newStreamId();
  readonly usage: TokenUsage = {};
  /** Upstream requests made so far (retries and resumable reconnects count). */
  attempts = 0;
  ttftMs: number | undefined;
  /** The route's adapter; once {@link redactWith} ran, with its client-facing errors scrubbed. */
  adapter: ProviderAdapter;
  /** What the upstream call must keep from clients and logs (set once its request is built). */
  redaction: UpstreamRedaction | undefined;
  /** Headers committed before the upstream answered (`policy.earlyCommitMs`), with heartbeats. */
  early: EarlyCommit | undefined;
  private readonly baseAdapter: ProviderAdapter;
  private readonly arrivedAt = performance.now();
  // One signal for everything that ends a stream from the gateway's side: the upstream call, the
  // retries' waits and the bridge watch it. Held for the whole stream, so not a WHATWG
  // AbortController (about 1 KB of heap per stream, see CallSignal).
  private readonly abort = new CallSignal();
  private readonly unwatchShutdown: () => void;
  private readonly unregister: () => void;
  private readonly totalTimer: NodeJS.Timeout | undefined;
  private readonly onClientClose = (): void => {
    if (!this.res.headersSent || this.early?.committed === true) this.abortWith(new ClientClosedError());
  };

  constructor(
    readonly req: Request,
    readonly res: Response,
    readonly env: StreamEnvironment,
  ) {
    const { route, shutdown } = env;
    const onShutdown = (): void => this.abortWith(shutdown.reason ?? new ShutdownError());
    if (shutdown.aborted) onShutdown();
    // Not addEventListener: the shutdown signal is shared by every stream (see abort-watch.ts).
    this.unwatchShutdown = watchAbort(shutdown, onShutdown);
    this.unregister = env.register((reason) => this.abortWith(reason));
    const totalMs = route.timeouts.totalMs;
    this.totalTimer = totalMs > 0 ? setTimeout(() => this.abortWith(new TimeoutError('total', totalMs, `stream exceeded its total time of ${totalMs} ms`)), totalMs) : undefined;
    res.on('close', this.onClientClose); // removed by handOverClientWatch() or close()
    env.metrics.activeStreams.inc({ route: route.path });
    // A protocol whose errors continue the stream's numbering (Responses) gets its own adapter.
    this.baseAdapter = env.adapter.forStream?.() ?? env.adapter;
    this.adapter = this.baseAdapter;
  }

  /** Keeps the upstream's credentials and URL out of everything a client sees from now on. */
  redactWith(redaction: UpstreamRedaction): UpstreamRedaction {
    this.redaction = redaction;
    this.adapter = scrubbingAdapter(this.baseAdapter, redaction.errors);
    return redaction;
  }

  /** Aborted when the gateway ends the stream; its reason is why. No WHATWG `AbortSignal` (see CallSignal). */
  get signal(): AbortSignalLike {
    return this.abort;
  }

  /** ms since the request arrived, to 0.1 ms. */
  elapsed(): number {
    return Math.round((performance.now() - this.arrivedAt) * 10) / 10;
  }

  /** Ends the stream from the gateway's side (once; later reasons are ignored). */
  abortWith(reason: unknown): void {
    this.abort.abort(reason);
  }

  /** The bridge watches the client once headers are sent: the early `'close'` listener goes. */
  handOverClientWatch(): void {
    this.res.off('close', this.onClientClose);
  }

  /** Records the first token's time (once). */
  firstToken(): void {
    if (this.ttftMs !== undefined) return;
    this.ttftMs = this.elapsed();
    this.env.metrics.ttft.observe({ route: this.env.route.path }, this.ttftMs / 1000);
  }

  /** Runs one upstream attempt, counting it and its outcome. */
  async attempt<T>(call: () => Promise<T>): Promise<T> {
    this.attempts++;
    try {
      const result = await call();
      this.countUpstream('ok');
      return result;
    } catch (err) {
      this.countUpstream(upstreamOutcome(err));
      throw err;
    }
  }

  /** Counts one upstream request by outcome (`tidegate_upstream_requests_total`). */
  countUpstream(outcome: string): void {
    this.env.metrics.upstreamRequests.inc({ route: this.env.route.path, outcome });
  }

  /** Options of `withRetries` for this stream: its signal, no retry once draining, and each retry counted by reason. */
  retryOptions(): { signal: AbortSignalLike; stopRetries: AbortSignalLike | undefined; onRetry(notice: RetryNotice): void } {
    return {
      signal: this.signal,
      stopRetries: this.env.draining,
      onRetry: ({ error }) => this.countRetry(error),
    };
  }

  /** Counts one retry before anything reached the client, by the failure that caused it (`tidegate_upstream_retries_total`). */
  countRetry(error: unknown): void {
    this.env.metrics.retries.inc({ route: this.env.route.path, reason: upstreamOutcome(error) });
  }

  /**
   * Waits for the whole answer ended on `res` (an upstream answer written by `writeWhole`, whose
   * `handed` count is progress too, or an HTTP error) to reach
   * the client, so that the stream, and the slot the request holds until it ends, count the
   * bytes held for it. Resolves with why it did not: a {@link ClientClosedError} when the client
   * left first, a {@link StalledError} when the client took no byte for the route's
   * `stallTimeoutMs` while bytes were unsent, the stream's abort reason (total timeout, shutdown)
   * when it aborts meanwhile; the connection is then reset. `undefined` once Node handed the last
   * byte to the kernel.
   */
  wholeDelivered(handed?: () => number): Promise<unknown> {
    const stallMs = this.env.route.policy.stallTimeoutMs;
    // An answer to the abort itself (a 504 after the total timeout) is not cut by it.
    return awaitDelivery(this.res, stallMs, this.signal.aborted ? undefined : this.signal, handed).then((end) => {
      if (end === 'client_closed') return new ClientClosedError();
      if (end === 'stalled') return new StalledError(stallMs);
      if (end === 'aborted') return this.signal.reason;
      return undefined;
    });
  }

  /** Counts and logs how the stream ended: one `stream` line with `fields`. */
  finish(outcome: RelayOutcome, fields: Record<string, unknown>): void {
    const { route, metrics, logger } = this.env;
    metrics.streams.inc({ route: route.path, outcome });
    metrics.duration.observe({ route: route.path, outcome }, (performance.now() - this.arrivedAt) / 1000);
    if (outcome === 'overflow') metrics.overflowTerminations.inc({ route: route.path });
    const entry: Record<string, unknown> = {
      streamId: this.streamId,
      route: route.path,
      provider: route.provider,
      method: this.req.method,
      attempts: this.attempts,
      outcome,
      durationMs: this.elapsed(),
    };
    // Not `{ ...entry, ...fields, inputTokens }`: V8 builds such a literal on its slow path.
    for (const key of Object.keys(fields)) entry[key] = fields[key];
    entry.inputTokens = this.usage.inputTokens;
    entry.outputTokens = this.usage.outputTokens;
    if (logger.defaultMeta == null) {
      // winston logs an entry that has its `level` and `message` as it stands, where
      // `info('stream', entry)` copies every key into a new object (and the defaults with it: a
      // logger with `defaultMeta` keeps that path, where the entry's keys win). Same keys, same order.
      entry.level = 'info';
      entry.message = 'stream';
      logger.log(entry as { level: string; message: string });
    } else logger.info('stream', entry);
  }

  /**
   * Releases the stream: its timers and listeners, and an upstream body nobody read to its end
   * (a policy that never subscribed, an answer sent before the stream started) with its call.
   */
  close(): void {
    if (this.totalTimer !== undefined) clearTimeout(this.totalTimer);
    this.early?.stop();
    this.abortWith(CLOSED);
    this.unwatchShutdown();
    this.res.off('close', this.onClientClose);
    this.unregister();
    this.env.metrics.activeStreams.dec({ route: this.env.route.path });
  }
}
