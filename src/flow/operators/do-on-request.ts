import { reportDropped } from '../discard';
import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Calls `fn(n)` for every `request(n)` that passes this point, before forwarding it upstream.
 * Mirrors Reactor `Flux#doOnRequest(LongConsumer)`; unbounded demand is reported as `Infinity`.
 *
 * ```
 * doOnRequest(log)   downstream request(2), request(3) → log(2), log(3); upstream 2, 3
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing. A throwing `fn` is reported as dropped; the request still goes upstream.
 *
 * @param fn receives each request amount (elements).
 * @example
 * source.pipe(doOnRequest((n) => requests.push(n)), limitRate(8));
 */
export function doOnRequest<T>(fn: (n: number) => void): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new DoOnRequestSubscriber<T>(actual, context, fn));
}

class DoOnRequestSubscriber<T> extends OperatorSubscriber<T, T> {
  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly fn: (n: number) => void,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    this.actual.onNext(value);
  }

  override request(n: number): void {
    try {
      this.fn(n);
    } catch (err) {
      reportDropped(err);
    }
    this.upstream.request(n);
  }
}
