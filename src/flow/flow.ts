import { Observable, type OperatorFunction, type Subscriber as RxSubscriber, type TeardownLogic } from 'rxjs';
import { addDemand, isValidRequest, normalizeRequest, rule39Error } from './demand';
import { EMPTY_CONTEXT, reportDropped, reportUnhandled } from './discard';
import type { FlowContext, FlowObserver, FlowSubscription, Publisher, Subscriber, Subscription } from './types';
import { liftRx } from './lift-rx';

/**
 * A stage of a Flow chain: a function from one Flow to another, like RxJS's `OperatorFunction`
 * and Reactor's `Function<Flux<A>, Publisher<B>>` for `Flux#transform`.
 */
export type FlowOperator<A, B> = (source: Flow<A>) => Flow<B>;

/** Either a Flow operator or a synchronous RxJS operator emitting at most one value per input. */
export type FlowPipeable<A, B> = FlowOperator<A, B> | OperatorFunction<A, B>;

/**
 * An RxJS `Observable<T>` that also speaks Reactive Streams demand.
 *
 * - `subscribe()` (plain RxJS) means unbounded demand, as Reactor's `Flux#subscribe()` requests
 *   `Long.MAX_VALUE`.
 * - {@link Flow.subscribeWithDemand} hands back a {@link FlowSubscription}: nothing is emitted
 *   before the first `request(n)`, and never more than the sum of requests.
 *
 * Mirrors Reactor `Flux<T>`; build one with `createFlow`, `fromIterable`, `fromReadable`,
 * `fromReadableStream` or `fromAsyncIterable`, or with `new Flow(publisher)` when writing a
 * source by hand (the publisher must follow the Reactive Streams rules).
 *
 * @example
 * const sub = fromIterable([1, 2, 3]).subscribeWithDemand({ next: (v) => console.log(v) });
 * sub.request(2); // logs 1, 2
 */
export class Flow<T> extends Observable<T> {
  /** @param publisher what subscribing does; see {@link Publisher}. */
  constructor(private readonly publisher: Publisher<T>) {
    super();
  }

  /**
   * The operator-author API: subscribes a raw Reactive Streams {@link Subscriber} with a
   * discard context, without boundary validation. Mirrors Reactor `CorePublisher#subscribe(CoreSubscriber)`.
   */
  subscribeWith(subscriber: Subscriber<T>, context: FlowContext = EMPTY_CONTEXT): void {
    this.publisher(subscriber, context);
  }

  /**
   * Subscribes with explicit demand. `observer.onSubscribe` runs synchronously, before any
   * upstream request, so a caller may `request` inside it. Invalid requests (rule 3.9) cancel
   * the upstream and signal `error(RangeError)`. Mirrors Reactor `Flux#subscribe(Subscriber)`
   * wrapped in `StrictSubscriber`.
   *
   * @returns the subscription; `request(n)` adds demand, `cancel()` stops the stream.
   */
  subscribeWithDemand(observer: FlowObserver<T> = {}): FlowSubscription {
    const strict = new StrictSubscriber<T>(observer);
    this.publisher(strict, EMPTY_CONTEXT);
    return strict;
  }

  /** @internal RxJS entry point: plain `subscribe()` requests unbounded demand. */
  protected _subscribe(rx: RxSubscriber<T>): TeardownLogic {
    let upstream: Subscription | undefined;
    this.publisher(
      {
        onSubscribe(s) {
          upstream = s;
          s.request(Infinity);
        },
        onNext: (v) => rx.next(v),
        onError: (e) => rx.error(e),
        onComplete: () => rx.complete(),
      },
      EMPTY_CONTEXT,
    );
    return () => upstream?.cancel();
  }

  /**
   * Composes operators left to right and returns a Flow. Each argument is a Flow operator, or a
   * synchronous RxJS operator (`map`, `filter`, `tap`, `scan` …) which is lifted so that demand
   * passes through and an input that produced no output is replenished with `request(1)`, as
   * Reactor's `filter` does. A lifted operator that emits more than one value per input, or
   * emits later, signals a `TypeError` rather than exceed demand.
   */
  override pipe(): Flow<T>;
  // Flow-operator-only overloads first: without a union parameter TypeScript can infer generic
  // operators (`limitRate(8)`, `onBackpressureBuffer()`) from their position in the chain.
  override pipe<A>(op1: FlowOperator<T, A>): Flow<A>;
  override pipe<A, B>(op1: FlowOperator<T, A>, op2: FlowOperator<A, B>): Flow<B>;
  override pipe<A, B, C>(op1: FlowOperator<T, A>, op2: FlowOperator<A, B>, op3: FlowOperator<B, C>): Flow<C>;
  override pipe<A, B, C, D>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
  ): Flow<D>;
  override pipe<A, B, C, D, E>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
    op5: FlowOperator<D, E>,
  ): Flow<E>;
  override pipe<A, B, C, D, E, F>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
    op5: FlowOperator<D, E>,
    op6: FlowOperator<E, F>,
  ): Flow<F>;
  override pipe<A, B, C, D, E, F, G>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
    op5: FlowOperator<D, E>,
    op6: FlowOperator<E, F>,
    op7: FlowOperator<F, G>,
  ): Flow<G>;
  override pipe<A, B, C, D, E, F, G, H>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
    op5: FlowOperator<D, E>,
    op6: FlowOperator<E, F>,
    op7: FlowOperator<F, G>,
    op8: FlowOperator<G, H>,
  ): Flow<H>;
  override pipe<A, B, C, D, E, F, G, H, I>(
    op1: FlowOperator<T, A>,
    op2: FlowOperator<A, B>,
    op3: FlowOperator<B, C>,
    op4: FlowOperator<C, D>,
    op5: FlowOperator<D, E>,
    op6: FlowOperator<E, F>,
    op7: FlowOperator<F, G>,
    op8: FlowOperator<G, H>,
    op9: FlowOperator<H, I>,
  ): Flow<I>;
  override pipe<A>(op1: FlowPipeable<T, A>): Flow<A>;
  override pipe<A, B>(op1: FlowPipeable<T, A>, op2: FlowPipeable<A, B>): Flow<B>;
  override pipe<A, B, C>(op1: FlowPipeable<T, A>, op2: FlowPipeable<A, B>, op3: FlowPipeable<B, C>): Flow<C>;
  override pipe<A, B, C, D>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
  ): Flow<D>;
  override pipe<A, B, C, D, E>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
    op5: FlowPipeable<D, E>,
  ): Flow<E>;
  override pipe<A, B, C, D, E, F>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
    op5: FlowPipeable<D, E>,
    op6: FlowPipeable<E, F>,
  ): Flow<F>;
  override pipe<A, B, C, D, E, F, G>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
    op5: FlowPipeable<D, E>,
    op6: FlowPipeable<E, F>,
    op7: FlowPipeable<F, G>,
  ): Flow<G>;
  override pipe<A, B, C, D, E, F, G, H>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
    op5: FlowPipeable<D, E>,
    op6: FlowPipeable<E, F>,
    op7: FlowPipeable<F, G>,
    op8: FlowPipeable<G, H>,
  ): Flow<H>;
  override pipe<A, B, C, D, E, F, G, H, I>(
    op1: FlowPipeable<T, A>,
    op2: FlowPipeable<A, B>,
    op3: FlowPipeable<B, C>,
    op4: FlowPipeable<C, D>,
    op5: FlowPipeable<D, E>,
    op6: FlowPipeable<E, F>,
    op7: FlowPipeable<F, G>,
    op8: FlowPipeable<G, H>,
    op9: FlowPipeable<H, I>,
  ): Flow<I>;
  override pipe(...ops: FlowPipeable<unknown, unknown>[]): Flow<unknown>;
  override pipe(...ops: ((source: never) => unknown)[]): Flow<unknown> {
    let current: Flow<unknown> = this as Flow<unknown>;
    for (const op of ops) current = applyOperator(current, op as FlowPipeable<unknown, unknown>);
    return current;
  }
}

function applyOperator(source: Flow<unknown>, op: FlowPipeable<unknown, unknown>): Flow<unknown> {
  // RxJS operators are lazy, so calling one to see what it returns subscribes to nothing.
  const out = (op as (s: Flow<unknown>) => Observable<unknown>)(source);
  return out instanceof Flow ? out : liftRx(source, op as OperatorFunction<unknown, unknown>);
}

/**
 * The public boundary: validates requests (rule 3.9), defers requests made before the upstream
 * subscription arrives, and drops signals after cancel. Mirrors Reactor's `StrictSubscriber`;
 * like Reactor's `LambdaSubscriber`, an observer's `onSubscribe` or `next` that throws cancels
 * the upstream and signals the exception to `error` (rule 2.13: a Subscriber returns normally),
 * so a throwing callback never unwinds into, or wedges, a source's emission loop.
 */
class StrictSubscriber<T> implements Subscriber<T>, FlowSubscription {
  private upstream: Subscription | undefined;
  private deferred = 0;
  private cancelled = false;
  private done = false;

  constructor(private readonly observer: FlowObserver<T>) {}

  onSubscribe(s: Subscription): void {
    if (this.upstream !== undefined || this.cancelled) {
      s.cancel(); // rule 2.5: a second onSubscribe is refused
      return;
    }
    this.upstream = s;
    try {
      this.observer.onSubscribe?.(this);
    } catch (err) {
      this.failFromCallback(err);
      return;
    }
    if (this.deferred > 0 && !this.cancelled) {
      const n = this.deferred;
      this.deferred = 0;
      s.request(n);
    }
  }

  request(n: number): void {
    if (this.cancelled || this.done) return;
    if (!isValidRequest(n)) {
      this.cancel();
      this.done = true;
      this.deliverError(rule39Error(n));
      return;
    }
    const amount = normalizeRequest(n);
    if (this.upstream === undefined) this.deferred = addDemand(this.deferred, amount);
    else this.upstream.request(amount);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.upstream?.cancel();
  }

  onNext(value: T): void {
    if (this.cancelled || this.done) return;
    try {
      this.observer.next?.(value);
    } catch (err) {
      this.failFromCallback(err);
    }
  }

  /** An observer callback threw: cancel upstream, then signal the exception once. */
  private failFromCallback(err: unknown): void {
    if (this.done || this.cancelled) return reportDropped(err);
    this.done = true;
    this.cancel();
    this.deliverError(err);
  }

  onError(error: unknown): void {
    if (this.cancelled || this.done) return;
    this.done = true;
    this.deliverError(error);
  }

  onComplete(): void {
    if (this.cancelled || this.done) return;
    this.done = true;
    try {
      this.observer.complete?.();
    } catch (err) {
      reportUnhandled(err); // the source already terminated: it must still run its teardown
    }
  }

  private deliverError(error: unknown): void {
    if (!this.observer.error) return reportUnhandled(error);
    try {
      this.observer.error(error);
    } catch (err) {
      reportUnhandled(err); // as RxJS reports a throwing error handler
    }
  }
}
