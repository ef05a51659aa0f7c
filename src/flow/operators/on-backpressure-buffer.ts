import { BufferOverflowError } from '../../errors';
import { type ByteBudget, utf8Size } from '../budget';
import { discard } from '../discard';
import type { FlowOperator } from '../flow';
import { ArrayQueue } from '../queue';
import type { FlowContext, Subscriber } from '../types';
import { DrainSubscriber } from './drain-subscriber';
import { addDiscardHook, operator } from './operator-subscriber';

/**
 * What {@link onBackpressureBuffer} does when an element does not fit the budget.
 * Mirrors Reactor `BufferOverflowStrategy` plus tidegate's `'terminate'`:
 * - `'error'` (default, Reactor `ERROR`): cancel the upstream, deliver the backlog on demand,
 *   then signal `BufferOverflowError`;
 * - `'drop-latest'` (Reactor `DROP_LATEST`): the incoming element is dropped;
 * - `'drop-oldest'` (Reactor `DROP_OLDEST`): the oldest buffered elements are evicted until the
 *   incoming one fits;
 * - `'terminate'` (tidegate): cancel the upstream, discard the backlog and signal
 *   `BufferOverflowError` at once (the SSE policy: a client that cannot keep up is cut off).
 */
export type BufferOverflowStrategy = 'error' | 'drop-latest' | 'drop-oldest' | 'terminate';

const STRATEGIES: readonly BufferOverflowStrategy[] = ['error', 'drop-latest', 'drop-oldest', 'terminate'];

/** Options for {@link onBackpressureBuffer}. Without `maxItems` and `maxBytes` the buffer is unbounded. */
export interface OnBackpressureBufferOptions<T> {
  /** Most elements parked at once, a positive integer (default unbounded). */
  maxItems?: number | undefined;
  /** Most bytes parked at once, as measured by `sizeOf`, at least 1 (default unbounded). */
  maxBytes?: number | undefined;
  /**
   * Size of one element in bytes. Default: UTF-8 byte length of a string (`Buffer.byteLength`),
   * `byteLength` of a Buffer, typed array, DataView or ArrayBuffer, and for anything else the
   * UTF-8 byte length of `JSON.stringify(value)` (`null`/`undefined` count 0). Must return a
   * finite number >= 0; a throw or an invalid size cancels the upstream and signals the error.
   */
  sizeOf?: ((value: T) => number) | undefined;
  /** What to do when an element does not fit; default `'error'` as in Reactor. */
  overflow?: BufferOverflowStrategy | undefined;
  /** Receives each element refused or evicted by an overflow, before the discard hooks. */
  onOverflow?: ((value: T) => void) | undefined;
  /** Receives each element this operator discards, before the context's `onDiscard` hook. */
  onDiscard?: ((value: T) => void) | undefined;
  /** Called after every change of the parked backlog with its bytes and element count (for metrics). */
  onBufferChange?: ((bufferedBytes: number, bufferedItems: number) => void) | undefined;
  /**
   * A per-stream {@link ByteBudget} shared with other stages (and the Express bridge): parked
   * bytes are acquired from it as well, and an element that does not fit it overflows like one
   * that does not fit `maxBytes`. Bytes are released as soon as they leave this buffer.
   */
  budget?: ByteBudget | undefined;
}

/**
 * Requests unbounded demand upstream and parks what the downstream has not asked for yet,
 * within an element budget (`maxItems`) and/or a byte budget (`maxBytes`, measured by
 * `sizeOf`). Mirrors Reactor `Flux#onBackpressureBuffer(int maxSize, Consumer onOverflow,
 * BufferOverflowStrategy)` (`FluxOnBackpressureBufferStrategy`); the byte budget and the
 * `'terminate'` strategy are tidegate's.
 *
 * Every element goes through the buffer: it fits when `items + 1 <= maxItems` and
 * `bytes + size <= maxBytes`, so a single element larger than `maxBytes` always overflows.
 * Its bytes return to the budget as soon as it leaves the buffer (before `onNext`).
 *
 * Completion always waits behind the backlog. An upstream error waits behind it too when
 * `overflow` is `'error'`, or is a drop strategy with an `onOverflow` callback (Reactor's
 * `delayError = onOverflow != null || strategy == ERROR`); otherwise it cuts ahead and the
 * backlog is discarded. `'terminate'` never waits.
 *
 * ```
 * onBackpressureBuffer({ maxItems: 2 })   (downstream requested 0)
 * source      --a--b--c-------------->
 * downstream  ------------(request 3)a--b--X   X = BufferOverflowError, c discarded
 * ```
 *
 * Demand: `Infinity` upstream at subscription; downstream requests are served from the buffer.
 * Discard: the overflowing element (`'error'`, `'terminate'`, `'drop-latest'`), evicted elements
 * (`'drop-oldest'`), the backlog on cancel, on `'terminate'` and on an error that cuts ahead;
 * each goes to `onOverflow` (overflow only), then `options.onDiscard`, then the context's hook.
 *
 * @param options budgets in elements and bytes, the strategy and hooks; a number is `maxItems`.
 * @throws RangeError when built with `maxItems < 1`, `maxBytes < 1` or an unknown strategy.
 * @example
 * source.pipe(onBackpressureBuffer({ maxBytes: 64 * 1024, overflow: 'terminate' }));
 */
export function onBackpressureBuffer<T>(options: OnBackpressureBufferOptions<T> | number = {}): FlowOperator<T, T> {
  const opts: OnBackpressureBufferOptions<T> = typeof options === 'number' ? { maxItems: options } : options;
  const maxItems = opts.maxItems ?? Infinity;
  const maxBytes = opts.maxBytes ?? Infinity;
  if (!(typeof maxItems === 'number' && maxItems >= 1 && (maxItems === Infinity || Number.isInteger(maxItems)))) {
    throw new RangeError(`onBackpressureBuffer: maxItems must be an integer >= 1, got ${String(opts.maxItems)}`);
  }
  if (!(typeof maxBytes === 'number' && maxBytes >= 1)) {
    throw new RangeError(`onBackpressureBuffer: maxBytes must be >= 1, got ${String(opts.maxBytes)}`);
  }
  const overflow = opts.overflow ?? 'error';
  if (!STRATEGIES.includes(overflow)) {
    throw new RangeError(`onBackpressureBuffer: overflow must be one of ${STRATEGIES.join(', ')}, got ${String(overflow)}`);
  }
  const config: BufferConfig<T> = {
    maxItems,
    maxBytes,
    overflow,
    measure: maxBytes !== Infinity || opts.sizeOf !== undefined || opts.onBufferChange !== undefined || opts.budget !== undefined,
    sizeOf: opts.sizeOf ?? (utf8Size as (value: T) => number),
    onOverflow: opts.onOverflow,
    onDiscard: opts.onDiscard as ((value: unknown) => void) | undefined,
    onBufferChange: opts.onBufferChange,
    budget: opts.budget,
    delayError: overflow === 'error' || (overflow !== 'terminate' && opts.onOverflow !== undefined),
  };
  return operator<T, T>((actual, context) => new BufferSubscriber<T>(actual, context, config));
}

interface BufferConfig<T> {
  readonly maxItems: number;
  readonly maxBytes: number;
  readonly overflow: BufferOverflowStrategy;
  readonly measure: boolean;
  readonly sizeOf: (value: T) => number;
  readonly onOverflow: ((value: T) => void) | undefined;
  readonly onDiscard: ((value: unknown) => void) | undefined;
  readonly onBufferChange: ((bufferedBytes: number, bufferedItems: number) => void) | undefined;
  readonly budget: ByteBudget | undefined;
  readonly delayError: boolean;
}

class BufferSubscriber<T> extends DrainSubscriber<T, T> {
  private readonly queue = new ArrayQueue<T>();
  private readonly sizes = new ArrayQueue<number>();
  private readonly ownContext: FlowContext;
  private bytes = 0;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly config: BufferConfig<T>,
  ) {
    super(actual, context);
    this.ownContext = config.onDiscard === undefined ? context : addDiscardHook(context, config.onDiscard);
  }

  protected override afterSubscribe(): void {
    this.upstream.request(Infinity);
  }

  onNext(value: T): void {
    if (this.done || this.cancelled) {
      this.discard(value);
      return;
    }
    const { config } = this;
    if (this.wip === 0 && this.requested > 0 && this.queue.length === 0 && this.passesWhole(value)) {
      // Fast path: demand is waiting and nothing is parked, so the element is never buffered.
      this.wip = 1;
      if (this.requested !== Infinity) this.requested--;
      this.actual.onNext(value);
      if (this.wip === 1) this.wip = 0;
      else this.drainLoop(1); // signals arrived while emitting
      return;
    }
    let size = 0;
    if (config.measure) {
      try {
        size = config.sizeOf(value);
        if (!(typeof size === 'number' && size >= 0 && Number.isFinite(size))) {
          throw new RangeError(`onBackpressureBuffer: sizeOf returned ${String(size)}, expected a finite number >= 0`);
        }
      } catch (err) {
        this.discard(value);
        this.fail(err);
        return;
      }
    }
    if (this.fits(size)) {
      this.push(value, size);
      this.drain();
      return;
    }
    switch (config.overflow) {
      case 'drop-latest':
        this.overflowed(value);
        return;
      case 'drop-oldest':
        if (size > config.maxBytes || (config.budget !== undefined && size > config.budget.available + this.bytes)) {
          this.overflowed(value); // can never fit: refusing it keeps the backlog
          return;
        }
        while (!this.fits(size) && this.queue.length > 0) {
          const oldest = this.queue.shift() as T;
          this.release(this.sizes.shift() as number);
          this.changed();
          if (!this.overflowed(oldest)) {
            this.discard(value);
            return;
          }
        }
        this.push(value, size);
        this.drain();
        return;
      case 'error':
      case 'terminate':
        this.upstream.cancel();
        if (!this.overflowed(value)) return;
        this.onError(new BufferOverflowError(overflowMessage(config, size)));
        return;
    }
  }


  protected override discard(value: unknown): void {
    discard(this.ownContext, value);
  }

  /**
   * True when `value` may skip the buffer: it is not larger than the whole budget (such an
   * element is always an overflow). Strings of at most `maxBytes / 3` UTF-16 units cannot be
   * larger, so the default size is not even computed for them.
   */
  private passesWhole(value: T): boolean {
    const { config } = this;
    const limit = Math.min(config.maxBytes, config.budget?.maxBytes ?? Infinity);
    if (limit === Infinity) return true;
    if (config.sizeOf === utf8Size && typeof value === 'string' && value.length * 3 <= limit) return true;
    try {
      const size = config.sizeOf(value);
      return typeof size === 'number' && size >= 0 && size <= limit;
    } catch {
      return false; // the slow path measures again and signals the error
    }
  }

  private fits(size: number): boolean {
    const { maxItems, maxBytes, budget } = this.config;
    return (
      this.queue.length + 1 <= maxItems && this.bytes + size <= maxBytes && (budget === undefined || size <= budget.available)
    );
  }

  private push(value: T, size: number): void {
    this.queue.push(value);
    this.sizes.push(size);
    this.bytes += size;
    this.config.budget?.tryAcquire(size); // fits() checked it
    this.changed();
  }

  private release(size: number): void {
    this.bytes -= size;
    this.config.budget?.release(size);
  }

  /**
   * Hands an overflowing element to `onOverflow`, then to the discard hooks. A throwing
   * `onOverflow` cancels the upstream and signals its error (Reactor does the same); returns
   * `false` then.
   */
  private overflowed(value: T): boolean {
    const hook = this.config.onOverflow;
    if (hook === undefined) {
      this.discard(value);
      return true;
    }
    try {
      hook(value);
      return true;
    } catch (err) {
      this.fail(err);
      return false;
    } finally {
      this.discard(value);
    }
  }

  private changed(): void {
    const hook = this.config.onBufferChange;
    if (hook === undefined) return;
    try {
      hook(this.bytes, this.queue.length);
    } catch {
      // a metrics hook must never break the stream
    }
  }

  protected override clear(): void {
    if (this.queue.length === 0) return;
    const values = this.queue.drainAll();
    this.sizes.clear();
    this.config.budget?.release(this.bytes);
    this.bytes = 0;
    this.changed();
    for (const v of values) this.discard(v);
  }

  protected override drainLoop(missed: number): void {
    for (;;) {
      while (this.requested > 0) {
        const empty = this.queue.length === 0;
        if (this.checkTerminated(this.done, empty)) return;
        if (empty) break;
        const value = this.queue.shift() as T;
        this.release(this.sizes.shift() as number);
        this.changed();
        if (this.requested !== Infinity) this.requested--;
        this.actual.onNext(value);
      }
      if (this.checkTerminated(this.done, this.queue.length === 0)) return;
      missed = this.wip -= missed;
      if (missed === 0) return;
    }
  }

  private checkTerminated(done: boolean, empty: boolean): boolean {
    if (this.cancelled) {
      this.clear();
      return true;
    }
    if (!done) return false;
    if (this.failed && !this.config.delayError) {
      this.clear();
      this.actual.onError(this.error);
      return true;
    }
    if (!empty) return false;
    if (this.failed) this.actual.onError(this.error);
    else this.actual.onComplete();
    return true;
  }
}

function overflowMessage<T>(config: BufferConfig<T>, size: number): string {
  if (config.maxBytes !== Infinity && size > config.maxBytes) {
    return `onBackpressureBuffer: an element of ${size} bytes exceeds maxBytes ${config.maxBytes}`;
  }
  const bounds = [
    config.maxItems !== Infinity ? `maxItems ${config.maxItems}` : undefined,
    config.maxBytes !== Infinity ? `maxBytes ${config.maxBytes}` : undefined,
    config.budget !== undefined ? `stream budget ${config.budget.maxBytes} bytes` : undefined,
  ].filter((b) => b !== undefined);
  return `onBackpressureBuffer: the consumer is slower than the producer and the buffer is full (${bounds.join(', ')})`;
}
