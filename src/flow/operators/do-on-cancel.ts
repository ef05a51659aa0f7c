import { reportDropped } from '../discard';
import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Calls `fn` once when the downstream cancels, before the cancel goes upstream. Not called
 * on completion or error. Mirrors Reactor `Flux#doOnCancel(Runnable)`.
 *
 * ```
 * doOnCancel(fn)   --a--b--(cancel)   fn() then upstream.cancel()
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing. A throwing `fn` is reported as dropped; the cancel still goes upstream.
 *
 * @param fn the callback.
 * @example
 * source.pipe(doOnCancel(() => metrics.cancelled.inc()));
 */
export function doOnCancel<T>(fn: () => void): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new DoOnCancelSubscriber<T>(actual, context, fn));
}

class DoOnCancelSubscriber<T> extends OperatorSubscriber<T, T> {
  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly fn: () => void,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    this.actual.onNext(value);
  }

  override cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    try {
      this.fn();
    } catch (err) {
      reportDropped(err);
    }
    this.upstream.cancel();
  }
}
