import type { FlowOperator } from '../flow';
import { Flow } from '../flow';
import { NOOP_SUBSCRIPTION } from '../sources/iterable';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber } from './operator-subscriber';

/**
 * Caps the total demand ever sent upstream at `cap`: downstream requests pass through,
 * trimmed so that their sum never exceeds `cap` (no request of 0 is ever sent); at the
 * `cap`-th element it cancels the upstream and completes. Mirrors Reactor
 * `Flux#limitRequest(long)` / `Flux#take(long, true)` (`FluxLimitRequest`).
 *
 * ```
 * limitRequest(3)   downstream request(2), request(5) → upstream request(2), request(1)
 * source            --a--b--c--d-->
 * downstream        --a--b--c|      (upstream cancelled at c)
 * ```
 *
 * Demand: forwards `min(n, cap - alreadyRequested)` for each `request(n)`, nothing once the
 * cap is reached; `cap === 0` completes at once without subscribing upstream.
 * Discard: nothing is held; an element beyond `cap` from a misbehaving source is discarded.
 *
 * @param cap the most elements ever requested and emitted, a non-negative integer or `Infinity`.
 * @throws RangeError when built with `cap < 0` or a non-integer.
 * @example
 * source.pipe(limitRequest(11)); // downstream requests 8, 2, 2, 2, 2 → upstream 8, 2, 1
 */
export function limitRequest<T>(cap: number): FlowOperator<T, T> {
  if (!(typeof cap === 'number' && cap >= 0 && (cap === Infinity || Number.isInteger(cap)))) {
    throw new RangeError(`limitRequest: cap must be a non-negative integer or Infinity, got ${String(cap)}`);
  }
  const total = cap >= Number.MAX_SAFE_INTEGER ? Infinity : cap;
  return (source) =>
    new Flow<T>((actual, context) => {
      if (total === 0) {
        actual.onSubscribe(NOOP_SUBSCRIPTION);
        actual.onComplete();
        return;
      }
      source.subscribeWith(new LimitRequestSubscriber<T>(actual, context, total), context);
    });
}

class LimitRequestSubscriber<T> extends OperatorSubscriber<T, T> {
  private toProduce: number;
  private requestRemaining: number;

  constructor(actual: Subscriber<T>, context: FlowContext, cap: number) {
    super(actual, context);
    this.toProduce = cap;
    this.requestRemaining = cap;
  }

  onNext(value: T): void {
    if (this.done || this.toProduce === 0) {
      this.discard(value);
      return;
    }
    if (this.toProduce !== Infinity) this.toProduce--;
    this.actual.onNext(value);
    if (this.toProduce === 0 && !this.done) {
      this.done = true;
      this.upstream.cancel();
      this.actual.onComplete();
    }
  }

  override request(n: number): void {
    const remaining = this.requestRemaining;
    const forward = remaining <= n ? remaining : n;
    if (remaining !== Infinity) this.requestRemaining = remaining - forward;
    if (forward !== 0) this.upstream.request(forward);
  }
}
