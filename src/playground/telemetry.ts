import type { OutgoingHttpHeaders } from 'node:http';
import type { PlaygroundRun } from './run';

/**
 * Where a {@link TelemetryHub} writes a subscriber's frames: a `ServerResponse` of its own, or
 * one run's slot on a page's shared stream (`GET /watch`).
 */
export interface TelemetryTarget {
  /** Bytes queued and not yet handed to the kernel. */
  readonly writableLength: number;
  writeHead(statusCode: number, headers: OutgoingHttpHeaders): unknown;
  write(chunk: Buffer): boolean;
  /** Writes `chunk` (the final frame) and ends this subscription. */
  end(chunk?: Buffer): unknown;
  /** Drops a subscriber that has not drained for `stallTimeoutMs`. */
  destroy(): unknown;
  on(event: 'close' | 'drain', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close' | 'drain', listener: () => void): unknown;
}

/** Options of {@link TelemetryHub}. Units in the names. */
export interface TelemetryHubOptions {
  /** Sampling period, ms: one timer per run, whatever the number of subscribers. */
  intervalMs: number;
  /** Subscribers at once; {@link TelemetryHub.subscribe} refuses more. */
  maxSubscribers: number;
  /**
   * Bytes a subscriber may have queued in its response (`res.writableLength`) and still be sent
   * a new sample; above it samples are skipped (each is a full snapshot, so only the latest is
   * owed) and the latest goes out on `'drain'`. Keep it above the socket's 16 KiB high-water mark.
   */
  maxQueuedBytes: number;
  /** A subscriber whose queue has not drained for this long is closed, ms (0: never). */
  stallTimeoutMs: number;
}

interface Subscriber {
  res: TelemetryTarget;
  /** `performance.now()` when it was first skipped for a full queue; `undefined` while it keeps up. */
  blockedSince: number | undefined;
  onDrain: () => void;
  onClose: () => void;
}

/**
 * A run's telemetry, shared by all its subscribers: one sampler (one timer, one `run.sample()`
 * and one encoded SSE frame per tick) writes `event: sample` to every subscriber, then
 * `event: end` with the final sample as the run finishes, and ends their responses.
 *
 * Per subscriber it costs two listeners and at most `maxQueuedBytes` + one frame of queued
 * bytes: a subscriber that does not read is skipped (no timer of its own, nothing buffered
 * beyond its response queue) and closed after `stallTimeoutMs` without a drain. The timer runs
 * only while the run has subscribers.
 */
export class TelemetryHub {
  private readonly subs = new Set<Subscriber>();
  private timer: NodeJS.Timeout | undefined;
  private latest: Buffer | undefined;
  private ended = false;

  constructor(
    private readonly run: PlaygroundRun,
    private readonly options: TelemetryHubOptions,
  ) {
    // The end goes out as the run finishes, not at the next tick; after the current I/O phase,
    // so the bridge's outcome (settled in a promise callback) is in the final sample.
    run.onFinished(() =>
      setImmediate(() => {
        if (this.subs.size > 0) this.tick();
      }),
    );
  }

  /** Subscribers now. */
  get size(): number {
    return this.subs.size;
  }

  /** True when a new subscriber would be refused. */
  get full(): boolean {
    return this.subs.size >= this.options.maxSubscribers;
  }

  /**
   * Commits `res` as an SSE response (a no-op on a shared stream) and adds it: it gets the current sample at once, then every
   * tick's. Returns `false` (and leaves `res` untouched) when {@link full}.
   */
  subscribe(res: TelemetryTarget): boolean {
    if (this.full) return false;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    const frame = this.sampleFrame();
    if (this.ended) {
      res.end(frame);
      return true;
    }
    const sub: Subscriber = {
      res,
      blockedSince: undefined,
      onDrain: () => {
        if (sub.blockedSince === undefined) return;
        sub.blockedSince = undefined;
        if (this.latest !== undefined) res.write(this.latest);
      },
      onClose: () => this.remove(sub),
    };
    res.on('drain', sub.onDrain);
    res.once('close', sub.onClose);
    this.subs.add(sub);
    res.write(frame);
    if (this.timer === undefined) this.timer = setInterval(this.tick, this.options.intervalMs);
    return true;
  }

  /** Ends every subscriber's response (without the final sample) and stops the timer. */
  close(): void {
    this.ended = true;
    this.stopTimer();
    for (const sub of [...this.subs]) {
      this.remove(sub);
      sub.res.end();
    }
  }

  private readonly tick = (): void => {
    const frame = this.sampleFrame();
    if (this.ended) {
      this.stopTimer();
      for (const sub of [...this.subs]) {
        this.remove(sub);
        sub.res.end(frame);
      }
      return;
    }
    const now = performance.now();
    const { maxQueuedBytes, stallTimeoutMs } = this.options;
    for (const sub of [...this.subs]) {
      const { res } = sub;
      if (res.writableLength <= maxQueuedBytes) {
        res.write(frame);
        continue;
      }
      sub.blockedSince ??= now;
      if (stallTimeoutMs > 0 && now - sub.blockedSince >= stallTimeoutMs) {
        this.remove(sub);
        res.destroy();
      }
    }
  };

  /** Samples the run once and encodes it; a finished run's sample is the `end` frame (and ends the hub). */
  private sampleFrame(): Buffer {
    const sample = this.run.sample();
    if (sample.state === 'finished') this.ended = true;
    const frame = Buffer.from(`event: ${sample.state === 'finished' ? 'end' : 'sample'}\ndata: ${JSON.stringify(sample)}\n\n`);
    this.latest = frame;
    return frame;
  }

  private remove(sub: Subscriber): void {
    if (!this.subs.delete(sub)) return;
    sub.res.off('drain', sub.onDrain);
    sub.res.off('close', sub.onClose);
    if (this.subs.size === 0) this.stopTimer();
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
