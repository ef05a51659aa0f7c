import { asyncScheduler, type SchedulerLike } from 'rxjs';
import type { FlowOperator } from '../flow';
import { operator, requireTimeoutMs } from './operator-subscriber';
import { TimeoutSubscriber } from './timeout-subscriber';

/**
 * Fails with `TimeoutError('total', ms)` when the sequence has not terminated within `ms` of
 * subscription, whatever the demand. The upstream is cancelled. Reactor has no single
 * operator for it (`Flux#take(Duration)` completes instead of failing).
 *
 * ```
 * totalTimeout(100)
 * source       --a--b--c--d--e--f--...
 * downstream   --a--b--c--d--X (100 ms)   X = TimeoutError('total', 100)
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing held; the upstream discards its own buffers on the cancel.
 *
 * @param ms the longest lifetime in milliseconds (> 0; `Infinity` disables it).
 * @param scheduler where the timer runs (default RxJS `asyncScheduler`).
 * @throws RangeError when built with `ms <= 0`, `NaN` or above 2^31-1 ms.
 * @example
 * upstream.pipe(totalTimeout(5 * 60_000));
 */
export function totalTimeout<T>(ms: number, scheduler: SchedulerLike = asyncScheduler): FlowOperator<T, T> {
  requireTimeoutMs('totalTimeout', ms);
  return operator<T, T>((actual, context) => new TotalTimeoutSubscriber<T>(actual, context, 'total', ms, scheduler));
}

class TotalTimeoutSubscriber<T> extends TimeoutSubscriber<T> {
  protected override afterSubscribe(): void {
    this.arm();
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    this.actual.onNext(value);
  }
}
