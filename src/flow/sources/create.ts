import { BufferOverflowError } from '../../errors';
import { addDemand } from '../demand';
import { discard, discardAll, reportDropped } from '../discard';
import { Flow } from '../flow';
import { ArrayQueue } from '../queue';
import type { FlowContext, Subscriber, Subscription } from '../types';

/**
 * What {@link createFlow} does with an element pushed while there is no demand for it.
 * Mirrors Reactor `FluxSink.OverflowStrategy`: `'buffer'` (default, unbounded: the producer is
 * trusted to honour `sink.requested`), `'drop'`, `'latest'`, `'error'` (`BufferOverflowError`).
 */
export type CreateOverflowStrategy = 'buffer' | 'drop' | 'latest' | 'error';

/** The producer side of {@link createFlow}. Mirrors Reactor `FluxSink`. */
export interface FlowSink<T> {
  /** Emits one element; beyond demand the {@link CreateOverflowStrategy} applies. Ignored (and discarded) after a terminal signal or cancel. */
  next(value: T): FlowSink<T>;
  /** Terminates with an error, after any buffered elements were delivered. */
  error(error: unknown): void;
  /** Completes, after any buffered elements were delivered. */
  complete(): void;
  /** Outstanding demand not yet covered by emitted or buffered elements (`Infinity` when unbounded). */
  readonly requested: number;
  /** True once the subscriber cancelled. */
  readonly isCancelled: boolean;
  /**
   * Called with every `request(n)`; called at once with the demand accumulated so far, if any.
   * `n` is `Infinity` under unbounded demand: never loop `n` times synchronously (see
   * {@link createFlow}, "Unbounded demand").
   */
  onRequest(callback: (n: number) => void): FlowSink<T>;
  /**
   * Called once when the subscriber cancels; called at once when it already has (a subscriber
   * may cancel inside `onSubscribe`, before the emitter registers this), as Reactor's
   * `FluxSink#onCancel` disposes at once on a cancelled sink.
   */
  onCancel(callback: () => void): FlowSink<T>;
  /** Called once after cancel or a terminal signal: release resources here. */
  onDispose(callback: () => void): FlowSink<T>;
}

/** Options for {@link createFlow}. */
export interface CreateFlowOptions {
  /** Default `'buffer'`, as Reactor's `Flux.create`. */
  overflow?: CreateOverflowStrategy | undefined;
}

/**
 * A programmatic source: `emitter` gets a {@link FlowSink} once per subscription, after the
 * subscriber's `onSubscribe`; it may return a teardown function (run like `onDispose`).
 * Mirrors Reactor `Flux.create(Consumer<FluxSink>, OverflowStrategy)`.
 *
 * Demand: the producer reads `sink.requested` or `sink.onRequest`; nothing is delivered
 * beyond the summed requests.
 * Unbounded demand: `onRequest` receives `Infinity` (and `requested` stays `Infinity`) when the
 * subscriber is unbounded: `onBackpressureBuffer`, `limitRate(Infinity)`, a plain `subscribe()`.
 * A producer that loops on `n` or on `requested` must therefore bound each synchronous run
 * itself: emit a batch, stop when `sink.isCancelled`, and continue the rest on `setImmediate`
 * (not `queueMicrotask`, which still starves I/O). {@link generate} does this by construction
 * and is the simpler choice for a synchronous producer; `createFlow` fits event- or
 * callback-driven producers (timers, sockets, emitters) that emit while `requested > 0`.
 * Discard: buffered elements on cancel, and elements refused by `'drop'`/`'latest'`/`'error'`.
 *
 * @example
 * // A synchronous producer that yields: at most 256 elements per event-loop turn.
 * const ticks = createFlow<number>((sink) => {
 *   let i = 0;
 *   let running = false;
 *   let later: NodeJS.Immediate | undefined;
 *   const pump = (): void => {
 *     later = undefined;
 *     running = true;
 *     for (let k = 0; k < 256 && sink.requested > 0 && !sink.isCancelled; k++) sink.next(i++);
 *     running = false;
 *     if (sink.requested > 0 && !sink.isCancelled) later = setImmediate(pump);
 *   };
 *   sink.onRequest(() => { if (!running && later === undefined) pump(); });
 *   return () => clearImmediate(later); // teardown: cancel or terminal signal
 * });
 */
export function createFlow<T>(
  emitter: (sink: FlowSink<T>) => void | (() => void),
  options: CreateFlowOptions = {},
): Flow<T> {
  const overflow = options.overflow ?? 'buffer';
  return new Flow<T>((actual, context) => {
    const sink = new CreateSink<T>(actual, context, overflow);
    actual.onSubscribe(sink);
    try {
      const teardown = emitter(sink);
      if (typeof teardown === 'function') sink.onDispose(teardown);
    } catch (err) {
      sink.error(err);
    }
  });
}

class CreateSink<T> implements FlowSink<T>, Subscription {
  private readonly queue = new ArrayQueue<T>();
  private demand = 0;
  private wip = 0;
  private done = false;
  private failure: unknown = undefined;
  private failed = false;
  private terminated = false;
  private cancelled = false;
  private requestCallback: ((n: number) => void) | undefined;
  private cancelCallback: (() => void) | undefined;
  private disposeCallbacks: (() => void)[] = [];

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    private readonly overflow: CreateOverflowStrategy,
  ) {}

  get requested(): number {
    return this.demand === Infinity ? Infinity : Math.max(0, this.demand - this.queue.length);
  }

  get isCancelled(): boolean {
    return this.cancelled;
  }

  next(value: T): FlowSink<T> {
    if (this.done || this.cancelled) {
      discard(this.context, value);
      return this;
    }
    if (this.queue.length >= this.demand) {
      switch (this.overflow) {
        case 'drop':
          discard(this.context, value);
          return this;
        case 'latest':
          if (this.queue.length > 0) discard(this.context, this.queue.pop());
          break;
        case 'error':
          discard(this.context, value);
          this.error(new BufferOverflowError('createFlow: the producer emitted beyond the requested demand'));
          return this;
        case 'buffer':
          break;
      }
    }
    this.queue.push(value);
    this.drain();
    return this;
  }

  error(error: unknown): void {
    if (this.done || this.cancelled) {
      if (!this.cancelled) reportDropped(error);
      return;
    }
    this.done = true;
    this.failed = true;
    this.failure = error;
    this.drain();
  }

  complete(): void {
    if (this.done || this.cancelled) return;
    this.done = true;
    this.drain();
  }

  onRequest(callback: (n: number) => void): FlowSink<T> {
    this.requestCallback = callback;
    const outstanding = this.requested;
    if (outstanding > 0 && !this.cancelled) callback(outstanding);
    return this;
  }

  onCancel(callback: () => void): FlowSink<T> {
    if (this.cancelled) {
      callback();
      return this;
    }
    this.cancelCallback = callback;
    return this;
  }

  onDispose(callback: () => void): FlowSink<T> {
    if (this.terminated || this.cancelled) callback();
    else this.disposeCallbacks.push(callback);
    return this;
  }

  request(n: number): void {
    if (this.cancelled || this.terminated) return;
    this.demand = addDemand(this.demand, n);
    this.requestCallback?.(n);
    this.drain();
  }

  cancel(): void {
    if (this.cancelled || this.terminated) return;
    this.cancelled = true;
    discardAll(this.context, this.queue.drainAll());
    this.cancelCallback?.();
    this.dispose();
  }

  private drain(): void {
    if (this.wip++ !== 0) return;
    let missed = 1;
    for (;;) {
      while (this.demand > 0 && this.queue.length > 0 && !this.cancelled) {
        const value = this.queue.shift() as T;
        if (this.demand !== Infinity) this.demand--;
        this.actual.onNext(value);
      }
      if (this.done && this.queue.length === 0 && !this.terminated && !this.cancelled) {
        this.terminated = true;
        if (this.failed) this.actual.onError(this.failure);
        else this.actual.onComplete();
        this.dispose();
      }
      missed = this.wip -= missed;
      if (missed === 0) return;
    }
  }

  private dispose(): void {
    const callbacks = this.disposeCallbacks;
    this.disposeCallbacks = [];
    for (const cb of callbacks) {
      try {
        cb();
      } catch (err) {
        reportDropped(err);
      }
    }
  }
}
