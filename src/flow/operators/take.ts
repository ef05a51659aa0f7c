import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber, Subscription } from '../types';
import { NOOP_SUBSCRIPTION } from '../sources/iterable';
import { limitRequest } from './limit-request';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Emits the first `n` elements, then cancels the upstream and completes. Mirrors Reactor
 * `Flux#take(long n, boolean limitRequest)`; as in Reactor 3.5+, `limitRequest` defaults to
 * `true`, making `take(n)` the same as {@link limitRequest}`(n)`.
 *
 * With `limitRequest = false` (Reactor `FluxTake`): the first `request(m)` goes upstream as
 * `Infinity` when `m >= n`, otherwise as `m`; later requests pass through untouched.
 *
 * ```
 * take(2)      --a--b--c-->
 *              --a--b|
 * ```
 *
 * Demand: see {@link limitRequest} (default) or above (`limitRequest = false`).
 * Discard: elements arriving after the `n`-th (from a source that ignores cancel).
 *
 * @param n how many elements to emit, a non-negative integer or `Infinity`.
 * @param limitRequestMode cap the upstream demand at `n` (default `true`).
 * @throws RangeError when built with `n < 0` or a non-integer.
 * @example
 * source.pipe(take(3));
 */
export function take<T>(n: number, limitRequestMode = true): FlowOperator<T, T> {
  if (!(typeof n === 'number' && n >= 0 && (n === Infinity || Number.isInteger(n)))) {
    throw new RangeError(`take: n must be a non-negative integer or Infinity, got ${String(n)}`);
  }
  if (limitRequestMode) return limitRequest<T>(n);
  return operator<T, T>((actual, context) => new TakeSubscriber<T>(actual, context, n));
}

class TakeSubscriber<T> extends OperatorSubscriber<T, T> {
  private firstRequest = true;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private remaining: number,
  ) {
    super(actual, context);
  }

  override onSubscribe(s: Subscription): void {
    if (this.remaining === 0) {
      s.cancel();
      this.done = true;
      this.actual.onSubscribe(NOOP_SUBSCRIPTION);
      this.actual.onComplete();
      return;
    }
    super.onSubscribe(s);
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    if (this.remaining !== Infinity) this.remaining--;
    const stop = this.remaining === 0;
    this.actual.onNext(value);
    if (stop && !this.done) {
      this.upstream.cancel();
      this.onComplete();
    }
  }

  override request(n: number): void {
    if (this.firstRequest) {
      this.firstRequest = false;
      this.upstream.request(n >= this.remaining ? Infinity : n);
      return;
    }
    this.upstream.request(n);
  }
}
