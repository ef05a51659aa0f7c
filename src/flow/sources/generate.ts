import { TidegateError } from '../../errors';
import { addDemand } from '../demand';
import { discard, reportDropped } from '../discard';
import { Flow } from '../flow';
import type { FlowContext, Subscriber, Subscription } from '../types';
import { NOOP_SUBSCRIPTION } from './iterable';

/**
 * A sink method was called where the {@link SynchronousSink} contract forbids it
 * (`ERR_TIDEGATE_ILLEGAL_STATE`): `next()` twice in one generator call, or any sink method
 * outside a generator call. Mirrors the `IllegalStateException` Reactor's `Flux.generate` signals.
 */
export class IllegalSinkStateError extends TidegateError {
  constructor(message: string) {
    super('ERR_TIDEGATE_ILLEGAL_STATE', message);
  }
}

/**
 * The sink {@link generate} hands its generator, valid only during that call. Mirrors Reactor
 * `SynchronousSink`: at most one `next`, then optionally `complete` or `error`.
 */
export interface SynchronousSink<T> {
  /**
   * Emits this call's element. A second call in the same generator call terminates the flow with
   * {@link IllegalSinkStateError} ("More than one call to next"); after a terminal signal or a
   * cancel the value is discarded.
   */
  next(value: T): void;
  /** Completes the flow; the generator is not called again. */
  complete(): void;
  /** Terminates the flow with `error`; the generator is not called again. */
  error(error: unknown): void;
}

/** Options for {@link generate}. */
export interface GenerateOptions<S = undefined> {
  /**
   * Called once with the last state after completion, error or cancel (Reactor's
   * `stateConsumer`): release resources held by the state here. Its errors are reported, not
   * signalled. Default: none.
   */
  stateConsumer?: ((state: S) => void) | undefined;
  /**
   * Generator calls made in one synchronous run before the source yields to the event loop
   * (`setImmediate`) and continues in the next turn. Bounds the time one stream holds the
   * thread under large or unbounded demand. A positive integer; default
   * {@link DEFAULT_GENERATE_SLICE} (256).
   */
  sliceSize?: number | undefined;
}

/** Default {@link GenerateOptions.sliceSize}: 256 generator calls per event-loop turn. */
export const DEFAULT_GENERATE_SLICE = 256;

/** A generator with state: called once per requested element with the state, returns the next state. */
export type StatefulGenerator<T, S> = (state: S, sink: SynchronousSink<T>) => S;

/**
 * Programmatically creates a flow by generating signals one by one: `generator` is called
 * synchronously once per requested element with a {@link SynchronousSink}, on which it calls
 * `next(value)` at most once, and may call `complete()` or `error(e)`. A call that emits nothing
 * is followed by another call (demand is unchanged). Mirrors Reactor `Flux.generate`: the
 * one-argument form `generate(generator)`, and the stateful form
 * `generate(stateSupplier, generator, { stateConsumer })`, where `stateSupplier` runs once per
 * subscription and each call returns the state the next call receives.
 *
 * Demand: the generator runs only while there is outstanding demand, inside `request(n)` (or a
 * later event-loop turn, see below), and stops at cancel.
 * Safe under unbounded demand: after `sliceSize` generator calls in one synchronous run it
 * yields to the event loop with `setImmediate` and continues there, so `request(Infinity)`
 * (`onBackpressureBuffer`, a plain `subscribe`) never starves other streams or sockets.
 * A cancel clears a pending continuation.
 * Errors: a generator or `stateSupplier` that throws terminates the flow with that error;
 * misusing the sink signals {@link IllegalSinkStateError}.
 * Discard: a `next` value after a terminal signal or cancel.
 *
 * @throws {TypeError} when `generator` (or `stateSupplier`) is not a function.
 * @throws {RangeError} when `sliceSize` is not a positive integer.
 *
 * @example
 * // 1, 2, 3, then complete
 * let i = 0;
 * generate<number>((sink) => (++i <= 3 ? sink.next(i) : sink.complete()));
 *
 * @example
 * // stateful: an endless count, paced by the consumer's demand
 * generate<string, number>(() => 0, (n, sink) => {
 *   sink.next(`tick ${n}`);
 *   return n + 1;
 * });
 */
export function generate<T>(generator: (sink: SynchronousSink<T>) => void, options?: GenerateOptions): Flow<T>;
export function generate<T, S>(stateSupplier: () => S, generator: StatefulGenerator<T, S>, options?: GenerateOptions<S>): Flow<T>;
export function generate<T, S>(
  first: ((sink: SynchronousSink<T>) => void) | (() => S),
  second?: StatefulGenerator<T, S> | GenerateOptions<S>,
  third?: GenerateOptions<S>,
): Flow<T> {
  if (typeof first !== 'function') throw new TypeError('generate: the generator must be a function');
  let stateSupplier: () => S;
  let generator: StatefulGenerator<T, S>;
  let options: GenerateOptions<S> | undefined;
  if (typeof second === 'function') {
    stateSupplier = first as () => S;
    generator = second;
    options = third;
  } else {
    const stateless = first as (sink: SynchronousSink<T>) => void;
    stateSupplier = () => undefined as S;
    generator = (state, sink) => {
      stateless(sink);
      return state;
    };
    options = second;
  }
  const sliceSize = options?.sliceSize ?? DEFAULT_GENERATE_SLICE;
  if (!Number.isInteger(sliceSize) || sliceSize <= 0) {
    throw new RangeError(`generate: sliceSize must be a positive integer, got ${String(sliceSize)}`);
  }
  const stateConsumer = options?.stateConsumer;
  return new Flow<T>((actual, context) => {
    let state: S;
    try {
      state = stateSupplier();
    } catch (err) {
      actual.onSubscribe(NOOP_SUBSCRIPTION);
      actual.onError(err);
      return;
    }
    actual.onSubscribe(new GenerateSubscription(actual, context, generator, state, stateConsumer, sliceSize));
  });
}

class GenerateSubscription<T, S> implements Subscription, SynchronousSink<T> {
  private demand = 0;
  /** A run loop is on the stack: `request` only adds demand, `cancel` leaves cleanup to it. */
  private emitting = false;
  /** Inside a generator call: the only time the sink may be used. */
  private inCall = false;
  private hasValue = false;
  private terminated = false;
  private cancelled = false;
  private cleaned = false;
  private continuation: NodeJS.Immediate | undefined;

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    private readonly generator: StatefulGenerator<T, S>,
    private state: S,
    private readonly stateConsumer: ((state: S) => void) | undefined,
    private readonly sliceSize: number,
  ) {}

  request(n: number): void {
    if (this.terminated || this.cancelled) return;
    this.demand = addDemand(this.demand, n);
    if (!this.emitting && this.continuation === undefined) this.run();
  }

  cancel(): void {
    if (this.cancelled || this.terminated) return;
    this.cancelled = true;
    if (this.continuation !== undefined) {
      clearImmediate(this.continuation);
      this.continuation = undefined;
    }
    if (!this.emitting) this.cleanup();
  }

  next(value: T): void {
    if (!this.inCall) {
      discard(this.context, value);
      reportDropped(new IllegalSinkStateError('generate: next() called outside the generator call'));
      return;
    }
    if (this.terminated || this.cancelled) {
      discard(this.context, value);
      return;
    }
    if (this.hasValue) {
      discard(this.context, value);
      this.error(new IllegalSinkStateError('generate: more than one call to next() in one generator call'));
      return;
    }
    this.hasValue = true;
    if (this.demand !== Infinity) this.demand--;
    this.actual.onNext(value);
  }

  complete(): void {
    if (!this.inCall) {
      reportDropped(new IllegalSinkStateError('generate: complete() called outside the generator call'));
      return;
    }
    if (this.terminated || this.cancelled) return;
    this.terminated = true;
    this.actual.onComplete();
  }

  error(error: unknown): void {
    if (!this.inCall) {
      reportDropped(new IllegalSinkStateError('generate: error() called outside the generator call'));
      return;
    }
    if (this.terminated || this.cancelled) {
      if (!this.cancelled) reportDropped(error);
      return;
    }
    this.terminated = true;
    this.actual.onError(error);
  }

  private readonly resume = (): void => {
    this.continuation = undefined;
    if (!this.terminated && !this.cancelled) this.run();
  };

  /** Calls the generator while there is demand, at most `sliceSize` times before yielding. */
  private run(): void {
    this.emitting = true;
    let calls = 0;
    try {
      while (this.demand > 0 && !this.terminated && !this.cancelled) {
        if (calls === this.sliceSize) {
          this.continuation = setImmediate(this.resume);
          return;
        }
        calls++;
        this.hasValue = false;
        this.inCall = true;
        try {
          this.state = this.generator(this.state, this);
        } catch (err) {
          this.inCall = false;
          if (this.terminated || this.cancelled) reportDropped(err);
          else {
            this.terminated = true;
            this.actual.onError(err);
          }
        }
        this.inCall = false;
      }
    } finally {
      this.emitting = false;
    }
    if (this.terminated || this.cancelled) this.cleanup();
  }

  private cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    const consumer = this.stateConsumer;
    if (consumer === undefined) return;
    try {
      consumer(this.state);
    } catch (err) {
      reportDropped(err);
    }
  }
}
