import type { FlowOperator } from '../flow';
import { DrainSubscriber } from './drain-subscriber';
import { operator } from './operator-subscriber';

/** Marks "no value retained" (an element may legitimately be `undefined`). */
const EMPTY: unique symbol = Symbol('empty');

/**
 * Requests unbounded demand upstream and keeps only the latest element the downstream has not
 * asked for yet, delivering it on the next request. Mirrors Reactor
 * `Flux#onBackpressureLatest()` (`FluxOnBackpressureLatest`): completion waits until the
 * retained element was delivered; an error cuts ahead and discards it.
 *
 * ```
 * onBackpressureLatest()   (no demand until after c)
 * source      --a--b--c--------|
 * downstream  ----------(req 1)c|   a, b discarded
 * ```
 *
 * Demand: `Infinity` upstream at subscription; downstream requests are served from the slot.
 * Discard: each retained element replaced by a newer one; the retained one on cancel or error.
 *
 * @example
 * prices.pipe(onBackpressureLatest());
 */
export function onBackpressureLatest<T>(): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new LatestSubscriber<T>(actual, context));
}

class LatestSubscriber<T> extends DrainSubscriber<T, T> {
  private value: T | typeof EMPTY = EMPTY;

  protected override afterSubscribe(): void {
    this.upstream.request(Infinity);
  }

  onNext(value: T): void {
    if (this.done || this.cancelled) {
      this.discard(value);
      return;
    }
    const previous = this.value;
    this.value = value;
    if (previous !== EMPTY) this.discard(previous);
    this.drain();
  }



  protected override clear(): void {
    const v = this.value;
    this.value = EMPTY;
    if (v !== EMPTY) this.discard(v);
  }

  protected override drainLoop(missed: number): void {
    for (;;) {
      while (this.requested > 0) {
        const empty = this.value === EMPTY;
        if (this.checkTerminated(this.done, empty)) return;
        if (empty) break;
        const v = this.value as T;
        this.value = EMPTY;
        if (this.requested !== Infinity) this.requested--;
        this.actual.onNext(v);
      }
      if (this.checkTerminated(this.done, this.value === EMPTY)) return;
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
    if (this.failed) {
      this.clear();
      this.actual.onError(this.error);
      return true;
    }
    if (!empty) return false;
    this.actual.onComplete();
    return true;
  }
}
