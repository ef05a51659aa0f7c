import type { ServerResponse } from 'node:http';
import { BufferOverflowError, SseLimitError, StalledError, TidegateError } from '../../errors';
import { ByteBudget } from '../../flow/budget';
import type { Flow } from '../../flow/flow';
import { ArrayQueue } from '../../flow/queue';
import type { Subscriber, Subscription } from '../../flow/types';
import { dropWrittenHead } from '../../http/node-hooks';
import { formatError, sendHttpError } from '../error-shapes';
import { chunkSize, toChunk, type Chunk } from './chunk';
import { Heartbeat } from './heartbeat';
import { commitSseHead } from './head';
import { kernelSendBytes } from './kernel-unsent';
import { lingerUntilDelivered } from './linger';
import { StallWatch } from './stall-watch';
import type { BridgeElement, SendFlowOptions, StreamHandle, StreamOutcome, StreamResult, BridgeState } from './types';

export const DEFAULT_PREFETCH = 16;
const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;
const DEFAULT_STALL_TIMEOUT_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 15_000;
const PING = Buffer.from(': ping\n\n');
/** Stop requesting while this many bytes wait for the end-of-tick flush (Node's default socket highWaterMark). */
const BATCH_HIGH_WATER_BYTES = 16 * 1024;
/** Bytes an HTTP/1.1 chunk adds around its data at most: hex size (≤ 8 digits) + CRLF, CRLF. */
const CHUNK_FRAMING_BYTES = 12;
/** Batches whose chunks average fewer bytes are copied into one chunk; larger ones are written corked. */
const COPY_BELOW_BYTES = 1024;

/**
 * The demand side of {@link sendFlow}: requests `prefetch` elements and replenishes at half
 * (Reactor's `limitRate` low tide) or, with `maxElementBytes`, as many as the budget has room
 * for; batches one tick's elements into one `res.write()` (large frames corked into one
 * `writev`); requests nothing while `res.write()` returns `false`, until `'drain'`; and decides
 * how the stream ends (terminal event, error event, HTTP error, linger behind a stopped reader).
 * The heartbeat, the stall watch and the linger are their own modules.
 */
export class DemandBridge implements Subscriber<BridgeElement>, StreamHandle {
  readonly done: Promise<StreamResult>;
  readonly budget: ByteBudget;
  private resolveDone!: (r: StreamResult) => void;
  private upstream: Subscription | undefined;
  private upstreamDone = false;
  private finished = false;
  private readonly prefetch: number;
  private readonly lowTide: number;

  private outstanding = 0;
  /** Elements that arrived while the socket was full: at most one requested batch. */
  private readonly held = new ArrayQueue<Chunk>();
  private heldBytes = 0;
  /**
   * Chunks written this tick, sent as one `res.write()` at the end of the tick; `undefined` when
   * empty, not a fresh array that a slow stream would keep until its next element (and the GC
   * would promote).
   */
  private batch: Chunk[] | undefined;
  private batchBytes = 0;
  private flushScheduled = false;
  /** A batch (or the head alone) went to `res`: the response head is on its way. */
  private headWritten = false;
  private socketFull = false;
  private events = 0;
  private bytes = 0;
  private readonly startedAt = performance.now();
  private ttftMs: number | undefined;
  /** When the stream last wrote (element or heartbeat), `Date.now()` ms (read by its {@link Heartbeat}). */
  lastWriteAt = Date.now();
  private readonly heartbeat: Heartbeat;
  private readonly stallWatch: StallWatch;
  private readonly stallMs: number;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SendFlowOptions,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.prefetch = Math.max(1, options.prefetch ?? DEFAULT_PREFETCH);
    this.lowTide = Math.max(1, this.prefetch >> 1);

    this.budget = options.budget ?? new ByteBudget(options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
    this.budget.attachExternal(() => this.heldBytes + this.batchBytes + res.writableLength);
    this.stallMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    // The bridge is their stream (methods, not closures: no context per stream for them).
    this.stallWatch = new StallWatch(res, this.stallMs, this);
    this.heartbeat = new Heartbeat(options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, this);
  }

  /** {@link Heartbeat}: a heartbeat is due; not into a full socket. */
  beat(): boolean {
    if (this.socketFull) return false;
    this.write(PING, PING.length);
    return true;
  }

  /** {@link StallWatch}: the socket is still full and the stream running. */
  stillFull(): boolean {
    return !this.finished && this.socketFull;
  }

  /** {@link StallWatch}: no progress for the stall timeout. */
  stalled(): void {
    this.finish('stalled', new StalledError(this.stallMs));
  }

  start(flow: Flow<BridgeElement>): void {
    const { res, options } = this;
    res.on('close', this.onClose);
    res.on('drain', this.onDrain);
    res.on('error', this.onResError);
    options.signal?.addEventListener('abort', this.onAbort);
    if (options.signal?.aborted) return this.onAbort();
    try {
      flow.subscribeWith(this);
    } catch (err) {
      return this.finish('error', err);
    }
    if (this.finished) return;
    this.commit(); // a stream that already finished gets no heartbeat
    this.heartbeat.start();
    this.request();
    // The head waits for the first batch (one write, not two) only until the end of this turn
    // of the event loop: a stream with nothing to send yet still gets its headers.
    if (!this.finished && !this.headWritten) setImmediate(this.flushHead);
  }

  private readonly flushHead = (): void => {
    if (this.finished || this.headWritten || this.res.destroyed) return;
    this.headWritten = true;
    this.res.flushHeaders();
    dropWrittenHead(this.res);
  };

  // ---- Subscriber side -------------------------------------------------------------------

  onSubscribe(s: Subscription): void {
    this.upstream = s;
  }

  onNext(element: BridgeElement): void {
    if (this.finished) return;
    this.outstanding--;
    if (this.ttftMs === undefined) {
      this.ttftMs = performance.now() - this.startedAt;
      this.options.onFirstElement?.();
    }
    let chunk: Chunk;
    try {
      chunk = toChunk(element);
    } catch (err) {
      // encodeSse refuses an id/event with CR or LF (injection): this stream ends, nothing else.
      return this.finish('error', err);
    }
    const size = chunkSize(chunk);
    // An element over the declared largest size would void the demand in bytes: refused as an
    // oversized event, like the parser's limits, not counted as an overflow of the budget.
    if (this.options.maxElementBytes !== undefined && size > this.options.maxElementBytes) {
      return this.finish('error', new SseLimitError('event', this.options.maxElementBytes));
    }
    // Count the element before holding it: one large element can never overshoot the budget
    // (with demand in bytes, nor the reserve kept for what the upstream side may still read).
    const reserve = this.options.maxElementBytes === undefined ? 0 : (this.options.reserveBytes?.() ?? 0);
    // `fits` records the peak: what the budget held with this element, or at the overflow.
    if (!this.budget.fits(size, reserve)) {
      return this.finish('overflow', new BufferOverflowError(`stream byte budget of ${this.budget.maxBytes} bytes exceeded by an element of ${size} bytes`));
    }
    this.events++;
    if (this.socketFull) {
      this.held.push(chunk);
      this.heldBytes += size;
      return;
    }
    this.write(chunk, size);
    this.request();
  }

  onError(error: unknown): void {
    this.upstreamDone = true;
    if (this.finished) return;
    // An upstream aborted because the client left is the client's doing, not an error.
    if (this.res.destroyed) return this.finish('client_closed');
    this.finish(error instanceof TidegateError && error.code === 'ERR_TIDEGATE_OVERFLOW' ? 'overflow' : 'error', error);
  }

  onComplete(): void {
    this.upstreamDone = true;
    if (this.finished) return;
    this.finish('completed');
  }

  // ---- StreamHandle -------------------------------------------------------------------

  end(error?: unknown): void {
    if (error === undefined) this.finish('completed');
    else this.finish('aborted', error);
  }

  flush(): void {
    if (this.finished || this.batch === undefined) return;
    this.flushBatch();
    const socket = this.res.socket;
    if (socket !== null) while (socket.writableCorked > 0) socket.uncork();
  }

  state(): BridgeState {
    return {
      finished: this.finished,
      upstreamDone: this.upstreamDone,
      socketFull: this.socketFull,
      outstanding: this.outstanding,
      heldElements: this.held.length,
      heldBytes: this.heldBytes,
      batchBytes: this.batchBytes,
      writableLength: this.res.writableLength,
      budgetUsed: this.budget.used,
      budgetMax: this.budget.maxBytes,
      events: this.events,
      bytes: this.bytes,
      idleMs: Date.now() - this.lastWriteAt,
      kernel: kernelSendBytes(this.res.socket),
    };
  }

  // ---- socket side --------------------------------------------------------------------

  private readonly onDrain = (): void => {
    if (this.finished) return;
    this.socketFull = false;
    this.stallWatch.clear();
    while (this.held.length > 0) {
      const chunk = this.held.shift() as Chunk;
      const size = chunkSize(chunk);
      this.heldBytes -= size;
      this.write(chunk, size);
    }
    this.flushBatch();
  };

  private readonly onClose = (): void => {
    if (!this.finished) this.finish('client_closed');
  };

  private readonly onResError = (err: unknown): void => {
    if (!this.finished) this.finish('client_closed', err);
  };

  private readonly onAbort = (): void => {
    if (!this.finished) this.finish('aborted', this.options.signal?.reason);
  };

  /** Commits the head ({@link commitSseHead}) and queues the retry hint first in the batch. */
  private commit(): void {
    if (this.res.headersSent) return;
    commitSseHead(this.res, this.options, this.budget.maxBytes);
    const hint = this.options.retryMs === undefined ? undefined : toChunk({ retry: this.options.retryMs });
    if (hint !== undefined) this.write(hint, hint.length);
  }

  private request(): void {
    if (this.finished || this.socketFull || this.upstream === undefined || this.upstreamDone) return;
    this.options.onWritable?.();
    if (this.finished) return;
    const elementBytes = this.options.maxElementBytes;
    if (elementBytes === undefined) {
      if (this.batchBytes >= BATCH_HIGH_WATER_BYTES) return; // the end-of-tick flush asks again
      if (this.outstanding > this.prefetch - this.lowTide) return;
      const n = this.prefetch - this.outstanding;
      this.outstanding += n;
      this.upstream.request(n);
      return;
    }
    // Demand in bytes: room for every requested element at its largest size. Liveness: with the
    // socket not full and nothing requested, room ≥ budget − reserve − writableHighWaterMark.
    const free = this.budget.room(this.options.reserveBytes?.() ?? 0);
    // Each element written costs its HTTP/1.1 chunk framing in res.writableLength too.
    let n = Math.min(this.prefetch, Math.floor(free / (elementBytes + CHUNK_FRAMING_BYTES))) - this.outstanding;
    if (n <= 0) {
      // Asked again after the flush, on 'drain', or when an element arrives. With nothing in
      // flight nothing would ask again: one element then, which fits or overflows (an oversized
      // event ends the stream with ERR_TIDEGATE_OVERFLOW instead of hanging it).
      if (this.outstanding > 0 || this.batch !== undefined || this.held.length > 0) return;
      n = 1;
    }
    this.outstanding += n;
    this.upstream.request(n);
  }

  /**
   * Queues a chunk for the end-of-tick flush: everything ready in one tick leaves in a single
   * `res.write()` (one HTTP chunk, one syscall), instead of one per token.
   */
  private write(chunk: Chunk, size: number): void {
    (this.batch ??= []).push(chunk);
    this.batchBytes += size;
    this.bytes += size;
    this.lastWriteAt = Date.now();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(this.flushBatch);
    }
  }

  /** Removes and returns the batch as one string or Buffer (`undefined` when empty). */
  private takeBatch(): Chunk | undefined {
    const { batch } = this;
    if (batch === undefined) return undefined;
    const out = batch.length === 1 ? batch[0] : Buffer.concat(batch, this.batchBytes);
    this.batch = undefined;
    this.batchBytes = 0;
    return out;
  }

  private readonly flushBatch = (): void => {
    this.flushScheduled = false;
    if (this.finished) return;
    const { batch } = this;
    if (batch === undefined) return this.request();
    const headWritten = this.headWritten;
    this.headWritten = true;
    let written: boolean;
    if (batch.length > 1 && this.batchBytes >= batch.length * COPY_BELOW_BYTES) {
      // Large chunks (byte relay frames): one writev of them all, without copying them together.
      this.batch = undefined;
      this.batchBytes = 0;
      this.res.cork();
      written = true;
      for (let i = 0; i < batch.length; i++) written = this.res.write(batch[i], i === batch.length - 1 ? this.afterWrite : undefined) && written;
      this.res.uncork();
    } else written = this.res.write(this.takeBatch() as Chunk, this.afterWrite);
    // The head left with this first batch: the stream keeps no copy of it.
    if (!headWritten) dropWrittenHead(this.res);
    if (!written) {
      this.socketFull = true;
      this.stallWatch.arm();
    }
    this.budget.observe();
    this.request();
  };

  /**
   * A flushed batch reached the kernel: its bytes left `res.writableLength` (and the budget)
   * without a `'drain'` when `write()` had returned true; whoever waits for room hears it.
   */
  private readonly afterWrite = (): void => {
    if (!this.finished && !this.socketFull) this.options.onWritable?.();
  };

  private finish(outcome: StreamOutcome, error?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    const { res, options } = this;
    if (!this.upstreamDone) {
      this.upstreamDone = true;
      this.upstream?.cancel();
    }
    this.stallWatch.clear();
    this.heartbeat.stop();
    res.off('drain', this.onDrain);
    res.off('close', this.onClose);
    options.signal?.removeEventListener('abort', this.onAbort);
    // Elements held for a full socket and what was written this tick still go out before a clean
    // or error end (at most one requested batch, already counted); not to a gone peer.
    const peerGone = outcome === 'client_closed' || outcome === 'stalled';
    // A flow that completes as it is subscribed ends before start() commits: the headers and the
    // retry hint go now, ahead of the batch taken below.
    if (outcome === 'completed' && !res.headersSent) this.commit();
    if (!peerGone) for (const chunk of this.held) this.write(chunk, chunk.length);
    this.held.clear();
    this.heldBytes = 0;
    const pending = peerGone ? undefined : this.takeBatch();
    this.batch = undefined;
    this.batchBytes = 0;

    if (outcome === 'client_closed') {
      res.off('error', this.onResError);
    } else if (outcome === 'stalled') {
      // The error event goes behind what the socket still holds, and the connection is not
      // reused. The response is ended only once the reader has taken everything (a reader that
      // comes back learns why); one that takes nothing for another stallTimeoutMs is reset (RST).
      // Not ended at once: Node would close the descriptor as soon as its own buffer reached the
      // kernel, and the orphaned socket would then hold the kernel's queue in FIN-WAIT-1 for
      // minutes, out of reach of a reset. (The 'error' listener stays: a reset must not crash.)
      res.shouldKeepAlive = false;
      const tail = toChunk((options.formatError ?? formatError)(error));
      this.bytes += tail.length;
      if (!res.writableEnded && !res.destroyed) res.write(tail);
      if (res.socket !== null) lingerUntilDelivered(res, res.socket, this.stallMs, true, () => res.end());
    } else if (!res.headersSent) {
      res.off('error', this.onResError);
      (options.sendHttpError ?? sendHttpError)(res, error);
    } else {
      // Keep an 'error' listener: a peer reset during the last write must not crash the process.
      const tail = outcome === 'completed' ? options.terminalEvent : (options.formatError ?? formatError)(error);
      this.endWith(pending, tail);
      // The end waits behind bytes Node could not hand to the kernel (a reader that stopped just
      // as the stream ended, e.g. by overflow or a total timeout): without a watch the connection
      // would stay open with them for as long as the peer keeps it. Bounded like a stall cut;
      // once Node has handed the end to the kernel, its keep-alive handling takes the socket over.
      if (res.socket !== null && !res.destroyed && res.writableLength > 0) lingerUntilDelivered(res, res.socket, this.stallMs, false, undefined);
    }
    const result: StreamResult = {
      outcome,
      error,
      events: this.events,
      bytes: this.bytes,
      ttftMs: this.ttftMs,
      durationMs: performance.now() - this.startedAt,
      peakBufferedBytes: this.budget.peak,
    };
    this.resolveDone(result);
    options.onFinish?.(result);
  }

  private endWith(pending: Chunk | undefined, tail: BridgeElement | undefined): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    const last = tail === undefined ? undefined : toChunk(tail);
    if (last !== undefined) this.bytes += chunkSize(last);
    if (pending !== undefined && last !== undefined) this.res.end(Buffer.concat([pending, last]));
    else if (pending !== undefined || last !== undefined) this.res.end((pending ?? last) as Chunk);
    else this.res.end();
  }
}
