import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';

/**
 * Where a {@link PacedResponse} passes on what its emulated client read: the real
 * `ServerResponse`, or one run's channel on a page's shared stream ({@link RunChannel}).
 */
export interface PacedTarget {
  readonly headersSent: boolean;
  statusCode: number;
  readonly req?: ServerResponse['req'] | undefined;
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  setHeader(name: string, value: string | number | readonly string[]): unknown;
  /** Commits the head; it leaves with the first write or {@link flushHeaders}. */
  writeHead(statusCode: number): unknown;
  flushHeaders(): void;
  /** `false`: wait for `'drain'` before the next write. */
  write(chunk: Buffer): boolean;
  end(): unknown;
  destroy(): unknown;
  on(event: 'close' | 'drain', listener: () => void): unknown;
  off(event: 'close' | 'drain', listener: () => void): unknown;
}

interface Pending {
  chunk: Buffer;
  offset: number;
  callback: (error?: Error | null) => void;
}

/**
 * The playground's emulated client: a Writable that stands in for the `ServerResponse` the
 * demand bridge writes to, and passes the bytes on to the real response (or a page's shared
 * stream, see {@link PacedTarget}) at `bytesPerSec`
 * (0 = a stalled reader). Its `writableHighWaterMark` is Node's default socket 16 KiB, so
 * `write()` returns `false` and `'drain'` fires exactly as they would on a socket whose peer
 * reads at that speed, and `writableLength` is the bytes the "client" has not read yet.
 *
 * Why not throttle in the browser: measured here, headless Chromium 156 kept accepting a
 * `fetch()` body whose reader never called `read()` (over 400 MB in 10 s, `res.write()` kept
 * draining), and the loopback kernel buffers alone hold about 8 MB per connection. A browser
 * reader that stops reading therefore backs nothing up within a demo's minute.
 */
export class PacedResponse extends Writable {
  /** Bytes passed to the real response so far (what the emulated client has read). */
  consumedBytes = 0;
  private pending: Pending | undefined;
  private allowance = 0;
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;
  private waitingForReal = false;
  private abandoned = false;

  constructor(
    private readonly real: PacedTarget,
    private readonly bytesPerSec: number,
    tickMs = 20,
  ) {
    super({ highWaterMark: 16 * 1024, decodeStrings: true });
    this.timer = setInterval(this.tick, tickMs);
    real.on('close', this.onRealClose);
    real.on('drain', this.onRealDrain);
  }

  // ---- the ServerResponse surface the demand bridge uses ----

  get headersSent(): boolean {
    return this.real.headersSent;
  }
  get statusCode(): number {
    return this.real.statusCode;
  }
  set statusCode(code: number) {
    this.real.statusCode = code;
  }
  get req(): ServerResponse['req'] | undefined {
    return this.real.req;
  }
  /** No socket: the bridge's stall detector then watches `writableLength` only. */
  get socket(): null {
    return null;
  }
  setHeader(name: string, value: string | number | readonly string[]): this {
    this.real.setHeader(name, value);
    return this;
  }
  writeHead(statusCode: number): this {
    this.real.writeHead(statusCode);
    return this;
  }
  flushHeaders(): void {
    this.real.flushHeaders();
  }

  /** Gives up on what the client has not read (a stalled client after the run ended) and ends the real response. */
  abandon(): void {
    this.abandoned = true;
    this.pending = undefined;
    this.destroy();
  }

  // ---- Writable internals ----

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending = { chunk, offset: 0, callback };
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.real.writableEnded && !this.real.destroyed) this.real.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    clearInterval(this.timer);
    this.real.off('close', this.onRealClose);
    this.real.off('drain', this.onRealDrain);
    if (this.abandoned) {
      if (!this.real.writableEnded && !this.real.destroyed) this.real.end();
    } else if (error !== null || !this.writableFinished) {
      // The bridge destroys a stalled stream's response: the real one goes too, as a socket would.
      if (!this.real.writableEnded && !this.real.destroyed) this.real.destroy();
    }
    callback(error);
  }

  private readonly tick = (): void => {
    const now = performance.now();
    // At most 100 ms of credit: a reader that was idle does not get a burst.
    this.allowance = Math.min(this.allowance + ((now - this.last) * this.bytesPerSec) / 1000, Math.max(1, this.bytesPerSec / 10));
    this.last = now;
    while (this.pending !== undefined && this.allowance >= 1 && !this.waitingForReal) {
      const p = this.pending;
      const n = Math.min(Math.floor(this.allowance), p.chunk.length - p.offset);
      const slice = p.chunk.subarray(p.offset, p.offset + n);
      p.offset += n;
      this.allowance -= n;
      this.consumedBytes += n;
      if (!this.real.write(slice)) this.waitingForReal = true;
      if (p.offset >= p.chunk.length) {
        this.pending = undefined;
        p.callback(null);
      }
    }
    if (this.pending === undefined) this.allowance = Math.min(this.allowance, Math.max(1, this.bytesPerSec / 10));
  };

  private readonly onRealDrain = (): void => {
    this.waitingForReal = false;
  };

  private readonly onRealClose = (): void => {
    // The browser left: the emulated client is gone too.
    if (!this.destroyed) this.destroy();
  };
}
