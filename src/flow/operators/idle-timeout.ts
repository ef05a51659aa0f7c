import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { addDemand } from '../demand';
import type { FlowOperator } from '../flow';
import { operator, requireTimeoutMs } from './operator-subscriber';
import { TimeoutSubscriber } from './timeout-subscriber';

/**
 * Fails with `TimeoutError('idle', ms)` when, after an element, the next one does not arrive
 * within `ms` **while there is outstanding demand**. Time during which the downstream has
 * asked for nothing does not count, so a slow consumer is never blamed for an idle producer:
 * the deadline is disarmed when demand reaches 0 and restarts in full on the next request.
 * The wait for the first element is {@link firstTimeout}'s job. The upstream is cancelled.
 * Mirrors the per-item part of Reactor `Flux#timeout(Duration)`, made demand-aware.
 *
 * ```
 * idleTimeout(50)   demand outstanding throughout
 * source       --a------b-----------------c
 * downstream   --a------b----------X (50 ms after b)   X = TimeoutError('idle', 50)
 * ```
 *
 * Demand: passes requests and cancel through untouched (it only counts them).
 * Discard: nothing held; the upstream discards its own buffers on the cancel.
 *
 * @param ms the longest gap between elements in milliseconds (> 0; `Infinity` disables it).
 * @param scheduler where the timer runs (default RxJS `asyncScheduler`).
 * @throws RangeError when built with `ms <= 0`, `NaN` or above 2^31-1 ms.
 * @example
 * upstream.pipe(firstTimeout(30_000), idleTimeout(10_000));
 */
export function idleTimeout<T>(ms: number, scheduler: SchedulerLike = asyncScheduler): FlowOperator<T, T> {
  requireTimeoutMs('idleTimeout', ms);
  return operator<T, T>((actual, context) => new IdleTimeoutSubscriber<T>(actual, context, 'idle', ms, scheduler));
}

class IdleTimeoutSubscriber<T> extends TimeoutSubscriber<T> {
  private outstanding = 0;
  private seenFirst = false;

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    this.disarm();
    this.seenFirst = true;
    if (this.outstanding !== Infinity && this.outstanding > 0) this.outstanding--;
    this.actual.onNext(value);
    if (this.outstanding > 0 && !this.armed) this.arm();
  }

  override request(n: number): void {
    this.outstanding = addDemand(this.outstanding, n);
    if (this.seenFirst && !this.armed) this.arm();
    this.upstream.request(n);
  }
}
