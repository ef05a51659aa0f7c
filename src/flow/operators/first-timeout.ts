import { asyncScheduler, type SchedulerLike } from 'rxjs';
import type { FlowOperator } from '../flow';
import { operator, requireTimeoutMs } from './operator-subscriber';
import { TimeoutSubscriber } from './timeout-subscriber';

/**
 * Fails with `TimeoutError('first', ms)` when the first element does not arrive within `ms`
 * of the first `request(n)` (not of subscription: a consumer that has not asked yet is not
 * waiting). The upstream is cancelled. Mirrors the first-item part of Reactor
 * `Flux#timeout(Publisher firstTimeout, Function nextTimeoutFactory)`; the time to first token.
 *
 * ```
 * firstTimeout(50)   request(1) at 0 ms
 * source       ----------------------a
 * downstream   ------------------X (50 ms)    X = TimeoutError('first', 50)
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing held; the upstream discards its own buffers on the cancel.
 *
 * @param ms the deadline in milliseconds (> 0; `Infinity` disables it).
 * @param scheduler where the timer runs (default RxJS `asyncScheduler`; pass a `TestScheduler` in tests).
 * @throws RangeError when built with `ms <= 0`, `NaN` or above 2^31-1 ms.
 * @example
 * upstream.pipe(firstTimeout(30_000));
 */
export function firstTimeout<T>(ms: number, scheduler: SchedulerLike = asyncScheduler): FlowOperator<T, T> {
  requireTimeoutMs('firstTimeout', ms);
  return operator<T, T>((actual, context) => new FirstTimeoutSubscriber<T>(actual, context, 'first', ms, scheduler));
}

class FirstTimeoutSubscriber<T> extends TimeoutSubscriber<T> {
  private started = false;
  private received = false;

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    if (!this.received) {
      this.received = true;
      this.disarm();
    }
    this.actual.onNext(value);
  }

  override request(n: number): void {
    if (!this.started) {
      this.started = true;
      this.arm(); // before forwarding: a synchronous source may answer inside request
    }
    this.upstream.request(n);
  }
}
