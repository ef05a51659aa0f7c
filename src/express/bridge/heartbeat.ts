/** What a {@link Heartbeat} reads of its stream and asks of it. */
export interface HeartbeatStream {
  /** When the stream last wrote (element or heartbeat), `Date.now()` ms. */
  readonly lastWriteAt: number;
  /** Writes a heartbeat if it can now (not into a full socket); true when it wrote one. */
  beat(): boolean;
}

/**
 * Writes a heartbeat after `heartbeatMs` of silence: re-armed for what remains of the interval
 * after each write, so a busy stream sends none. The stream's `beat` decides whether it can
 * write now (not into a full socket); a heartbeat it could not write is skipped, and the next
 * one is due a whole interval later, so a stalled stream's timer fires once per interval.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly heartbeatMs: number,
    private readonly stream: HeartbeatStream,
  ) {}

  /** Arms the first heartbeat (no-op when `heartbeatMs` is 0). */
  start(): void {
    if (this.heartbeatMs > 0) this.arm(this.heartbeatMs);
  }

  /** Stops for good. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(this.onTimer, ms);
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    if (Date.now() - this.stream.lastWriteAt >= this.heartbeatMs && !this.stream.beat()) return this.arm(this.heartbeatMs);
    this.arm(Math.max(1, this.heartbeatMs - (Date.now() - this.stream.lastWriteAt)));
  };
}
