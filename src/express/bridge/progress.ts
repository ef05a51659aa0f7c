import type { ServerResponse } from 'node:http';
import { sendQueueBytes } from './tcp-send-queue';

/** How often a full socket is sampled for progress, ms: a fifth of the stall timeout, 10 ms–1 s. */
export function stallTickMs(stallMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(stallMs / 5)));
}

/**
 * Tells whether a reader made progress between two samples: Node's unsent bytes
 * (`res.writableLength`) shrank, or the kernel's send queue moved at all (an ACK freed space,
 * and libuv refilled it). A stalled reader advertises a zero window, so neither moves.
 */
export class ProgressSampler {
  private unsent = 0;
  private kernel: number | undefined;

  constructor(
    private readonly res: ServerResponse,
    /** The sampling tick, ms: one read of the kernel's table serves every stream for half of it. */
    private readonly tickMs: number,
  ) {}

  /** Starts from the current counts (the kernel's queue is first read at the next sample). */
  reset(): void {
    this.unsent = this.res.writableLength;
    this.kernel = undefined;
  }

  /** True when the reader took bytes since the previous sample. */
  moved(): boolean {
    const socket = this.res.socket;
    const unsent = this.res.writableLength;
    const shrank = unsent < this.unsent;
    this.unsent = unsent;
    // Reading the kernel's queue parses /proc/net/tcp: only when Node's own count shows nothing.
    // One table read serves every stream for half a tick (a read costs ~10 ms of kernel time),
    // so each sample still sees a table read after the previous one.
    const kernel = shrank || !socket ? undefined : sendQueueBytes(socket, this.tickMs / 2);
    const moved = shrank || (kernel !== undefined && this.kernel !== undefined && kernel !== this.kernel);
    this.kernel = kernel;
    return moved;
  }
}
