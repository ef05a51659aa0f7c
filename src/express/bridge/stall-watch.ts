import type { ServerResponse } from 'node:http';
import { ProgressSampler, stallTickMs } from './progress';

/** What a {@link StallWatch} asks of its stream. */
export interface StallWatched {
  /** True while the socket is still full and the stream running (checked at each tick). */
  stillFull(): boolean;
  /** No progress for `stallMs`: called once. */
  stalled(): void;
  /**
   * True when the stream saw the client take bytes since the previous tick by a count of its own
   * (a whole answer written slice by slice), besides what the socket shows. Absent: only the socket.
   */
  moved?(): boolean;
}

/**
 * Watches a full socket for a reader that stopped: progress is any byte the kernel accepts (a
 * shrinking unsent count, a moving kernel send queue), not only `'drain'`, since a reader taking
 * 1 KiB/s may need many seconds per `'drain'`. Calls the stream's `stalled` once no progress was seen for
 * `stallMs`. 0 disables it.
 */
export class StallWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastProgressAt = 0;
  private readonly tickMs: number;
  private readonly sampler: ProgressSampler;

  constructor(
    res: ServerResponse,
    private readonly stallMs: number,
    private readonly stream: StallWatched,
  ) {
    this.tickMs = stallTickMs(stallMs);
    this.sampler = new ProgressSampler(res, this.tickMs);
  }

  /** Starts watching (no-op when watching already or disabled). The kernel's queue is first sampled at the first check: most full sockets drain before it. */
  arm(): void {
    if (this.stallMs <= 0 || this.timer !== undefined) return;
    this.sampler.reset();
    this.lastProgressAt = Date.now();
    this.timer = setTimeout(this.check, this.tickMs);
  }

  /** Stops watching (`'drain'`, or the end of the stream). */
  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly check = (): void => {
    this.timer = undefined;
    if (!this.stream.stillFull()) return;
    const now = Date.now();
    const own = this.stream.moved?.() === true;
    if (this.sampler.moved() || own) this.lastProgressAt = now;
    if (now - this.lastProgressAt >= this.stallMs) return this.stream.stalled();
    this.timer = setTimeout(this.check, Math.min(this.stallMs - (now - this.lastProgressAt), this.tickMs));
  };
}
