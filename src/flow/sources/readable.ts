import type { Readable } from 'node:stream';
import { addDemand } from '../demand';
import { discard, discardAll } from '../discard';
import { Flow } from '../flow';
import { ArrayQueue } from '../queue';
import type { FlowContext, Subscriber, Subscription } from '../types';

/** Options for {@link fromReadable}. */
export interface FromReadableOptions {
  /** `destroy()` the stream on cancel (default `true`): closes the socket behind an HTTP body. */
  destroyOnCancel?: boolean | undefined;
  /** Called once on cancel, before the stream is destroyed, e.g. to abort the HTTP request. */
  onCancel?: (() => void) | undefined;
  /**
   * Receives the bytes this source holds for its subscriber: chunks read from the stream after a
   * `pause()` raced them, not yet delivered (`byteLength` of a Buffer or typed array, `length` of
   * a string, 0 for other values). Updated as chunks are parked and delivered; with the stream's
   * own `readableLength` it is everything read but not yet handed on.
   */
  parked?: { bytes: number } | undefined;
}

/**
 * Emits the chunks of a Node `Readable` (a node-fetch body, a socket, a file) with demand:
 * the stream is `pause()`d whenever demand is 0 and `resume()`d on `request(n)`, so its internal
 * buffer fills to `highWaterMark` and the kernel, then TCP, push back on the sender.
 *
 * Demand: one chunk per unit of demand; chunk size is the stream's (up to its `highWaterMark`).
 * Discard: a chunk that raced a `pause()` is held (never more than the stream's own buffer) and
 * discarded on cancel. Errors: the stream's `'error'`, or a premature close
 * (`ERR_STREAM_PREMATURE_CLOSE`), signalled downstream after the bytes the stream had already
 * buffered (a reset upstream loses nothing it sent before the reset); `'end'` completes.
 *
 * @example
 * fromReadable(response.body).pipe(sseDecode()).subscribeWithDemand({ next }).request(1);
 */
export function fromReadable<T = Buffer>(readable: Readable, options: FromReadableOptions = {}): Flow<T> {
  return new Flow<T>((actual, context) => {
    const subscription = new ReadableSubscription<T>(actual, context, readable, options);
    actual.onSubscribe(subscription);
    subscription.start();
  });
}

class ReadableSubscription<T> implements Subscription {
  private demand = 0;
  private readonly parked = new ArrayQueue<T>();
  private ended = false;
  private finished = false;
  /** The stream failed: signalled once the chunks it had buffered were delivered. */
  private failure: { error: unknown } | undefined;
  /** Listening to the stream (from {@link start} until {@link detach}). */
  private watching = false;

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    private readonly readable: Readable,
    private readonly options: FromReadableOptions,
  ) {}

  private readonly onData = (chunk: T): void => {
    if (this.finished) return;
    if (this.demand > 0 && this.parked.length === 0) {
      if (this.demand !== Infinity) this.demand--;
      this.actual.onNext(chunk);
      // Paused only if the subscriber did not ask again while handling the chunk (it usually
      // does, synchronously): no pause()/resume() and resume tick per chunk. A chunk the stream
      // emits meanwhile without demand is parked below.
      if (this.demand === 0 && !this.finished) this.readable.pause();
    } else {
      this.park(chunk);
      this.readable.pause();
    }
  };

  private park(chunk: T): void {
    this.parked.push(chunk);
    if (this.options.parked !== undefined) this.options.parked.bytes += chunkBytes(chunk);
  }

  private readonly onEnd = (): void => {
    this.ended = true;
    this.drainParked();
  };

  // The stream's end as `stream.finished()` would report it for a readable, with two listeners
  // instead of that helper's eight closures per stream: its 'error', or a 'close' without 'end'.
  private readonly onError = (err: unknown): void => this.failed(err);

  private readonly onClose = (): void => {
    // Destroyed without an error after its last push but before 'end': no 'end' will come.
    const err = this.readable.errored ?? undefined;
    this.failed(err ?? (this.ended ? undefined : Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })));
  };

  private failed(error: unknown): void {
    if (this.finished || this.failure !== undefined || error === undefined) return;
    // What the stream had buffered before it failed is still delivered, then the error.
    this.readable.off('data', this.onData);
    for (let chunk = this.readable.read() as T | null; chunk !== null; chunk = this.readable.read() as T | null) this.park(chunk);
    this.failure = { error };
    this.drainParked();
  }

  start(): void {
    if (this.finished) return;
    this.readable.pause();
    this.readable.on('data', this.onData);
    this.readable.on('end', this.onEnd);
    this.readable.on('error', this.onError);
    this.readable.on('close', this.onClose);
    this.watching = true;
    // Closed already: no 'close' will come.
    if (this.readable.closed) process.nextTick(this.onClose);
    if (this.demand > 0) this.readable.resume();
  }

  request(n: number): void {
    if (this.finished) return;
    this.demand = addDemand(this.demand, n);
    this.drainParked();
    if (!this.finished && this.failure === undefined && this.demand > 0 && this.watching) this.readable.resume();
  }

  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    this.detach();
    discardAll(this.context, this.parked.drainAll());
    this.options.onCancel?.();
    if (this.options.destroyOnCancel !== false) this.readable.destroy();
  }

  private drainParked(): void {
    while (this.demand > 0 && this.parked.length > 0 && !this.finished) {
      if (this.demand !== Infinity) this.demand--;
      const chunk = this.parked.shift() as T;
      if (this.options.parked !== undefined) this.options.parked.bytes -= chunkBytes(chunk);
      this.actual.onNext(chunk);
    }
    if (this.parked.length > 0 || this.finished) return;
    if (this.failure !== undefined) this.fail(this.failure.error);
    else if (this.ended) {
      this.finished = true;
      this.detach();
      this.actual.onComplete();
    }
  }

  private fail(err: unknown): void {
    this.finished = true;
    this.detach();
    for (const v of this.parked.drainAll()) discard(this.context, v);
    this.actual.onError(err);
  }

  private detach(): void {
    if (this.options.parked !== undefined) this.options.parked.bytes = 0;
    this.readable.off('data', this.onData);
    this.readable.off('end', this.onEnd);
    this.readable.off('error', this.onError);
    this.readable.off('close', this.onClose);
    this.watching = false;
  }
}

/** Bytes of a chunk for {@link FromReadableOptions.parked}. */
function chunkBytes(chunk: unknown): number {
  if (typeof chunk === 'string') return chunk.length;
  return ArrayBuffer.isView(chunk) ? chunk.byteLength : 0;
}
