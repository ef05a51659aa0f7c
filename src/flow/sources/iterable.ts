import { addDemand } from '../demand';
import { discard } from '../discard';
import { Flow } from '../flow';
import type { FlowContext, Subscriber, Subscription } from '../types';

/**
 * Emits the elements of a synchronous iterable, synchronously inside `request(n)`, then
 * completes as soon as the last one was emitted (no extra demand needed). Mirrors Reactor
 * `Flux.fromIterable` / `Flux.range`: an empty iterable completes at subscription.
 *
 * Demand: pulls exactly one element ahead of each emission to learn whether it was the last.
 * Discard: on cancel, the pulled-ahead element; for arrays (known finite, read by index), the
 * elements not yet emitted, as Reactor discards a known-finite iterable's rest.
 *
 * @example
 * fromIterable([1, 2, 3]).subscribeWithDemand({ next: console.log }).request(2); // 1, 2
 */
export function fromIterable<T>(iterable: Iterable<T>): Flow<T> {
  if (Array.isArray(iterable)) return fromArray(iterable as readonly T[]);
  return new Flow<T>((actual, context) => {
    let iterator: Iterator<T>;
    let first: IteratorResult<T>;
    try {
      iterator = iterable[Symbol.iterator]();
      first = iterator.next();
    } catch (err) {
      actual.onSubscribe(NOOP_SUBSCRIPTION);
      actual.onError(err);
      return;
    }
    if (first.done) {
      actual.onSubscribe(NOOP_SUBSCRIPTION);
      actual.onComplete();
      return;
    }
    actual.onSubscribe(new IterableSubscription(actual, context, iterator, first.value));
  });
}

/** Arrays skip the iterator protocol: same signals, indexed reads (Reactor `Flux.fromArray`). */
function fromArray<T>(array: readonly T[]): Flow<T> {
  return new Flow<T>((actual, context) => {
    if (array.length === 0) {
      actual.onSubscribe(NOOP_SUBSCRIPTION);
      actual.onComplete();
      return;
    }
    actual.onSubscribe(new ArraySubscription(actual, context, array));
  });
}

class ArraySubscription<T> implements Subscription {
  private demand = 0;
  private emitting = false;
  private finished = false;
  private index = 0;

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    private readonly array: readonly T[],
  ) {}

  request(n: number): void {
    if (this.finished) return;
    this.demand = addDemand(this.demand, n);
    if (this.emitting) return; // the running loop sees the new demand
    this.emitting = true;
    const { array, actual } = this;
    const length = array.length;
    try {
      while (this.demand > 0 && !this.finished) {
        const value = array[this.index++];
        if (this.demand !== Infinity) this.demand--;
        actual.onNext(value);
        if (this.finished) return;
        if (this.index === length) {
          this.finished = true;
          actual.onComplete();
          return;
        }
      }
    } finally {
      this.emitting = false;
    }
  }

  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.context.onDiscard === undefined) return;
    for (let i = this.index; i < this.array.length; i++) discard(this.context, this.array[i]);
  }
}

/** A subscription that ignores requests: for sources that terminate at once. */
export const NOOP_SUBSCRIPTION: Subscription = Object.freeze({
  request() {},
  cancel() {},
});

class IterableSubscription<T> implements Subscription {
  private demand = 0;
  private emitting = false;
  private finished = false;

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    private readonly iterator: Iterator<T>,
    private lookahead: T,
  ) {}

  request(n: number): void {
    if (this.finished) return;
    this.demand = addDemand(this.demand, n);
    if (this.emitting) return; // the running loop sees the new demand
    this.emitting = true;
    try {
      while (this.demand > 0 && !this.finished) {
        const value = this.lookahead;
        if (this.demand !== Infinity) this.demand--;
        this.actual.onNext(value);
        if (this.finished) return;
        let next: IteratorResult<T>;
        try {
          next = this.iterator.next();
        } catch (err) {
          this.finished = true;
          this.actual.onError(err);
          return;
        }
        if (next.done) {
          this.finished = true;
          this.actual.onComplete();
          return;
        }
        this.lookahead = next.value;
      }
    } finally {
      this.emitting = false;
    }
  }

  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.context.onDiscard === undefined) return;
    discard(this.context, this.lookahead);
  }
}
