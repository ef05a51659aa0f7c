import { type SchedulerAction, type SchedulerLike, type Subscription as RxSubscription } from 'rxjs';
import { TimeoutError, type TimeoutKind } from '../../errors';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber } from './operator-subscriber';

/**
 * Shared timer bookkeeping of the timeout operators: one deadline at a time on an RxJS
 * `SchedulerLike` (so `TestScheduler` / `VirtualTimeScheduler` drive it in tests). When the
 * deadline passes, the upstream is cancelled and `TimeoutError(kind, timeoutMs)` signalled.
 * Terminal signals and cancel disarm it.
 *
 * The timer is lazy: moving the deadline (an idle timeout restarted by every element) only
 * records the new deadline; the one scheduled action, when it fires early, reschedules itself
 * for the rest. Restarting is then a clock read, not a timer cancelled and created per element
 * (with `asyncScheduler` each of those is a `setInterval`/`clearInterval` pair and an action
 * object: 12% of the gateway's allocations at 10,000 events/s before this).
 */
export abstract class TimeoutSubscriber<T> extends OperatorSubscriber<T, T> {
  private timer: RxSubscription | undefined;
  /**
   * When the armed deadline passes (scheduler time, ms); `NaN` when disarmed. Always a number, so
   * V8 keeps the field as an unboxed double updated in place: `undefined` there would make every
   * re-arm allocate a heap number, kept until the next element and promoted on a slow stream.
   */
  private deadline = Number.NaN;
  /** The deadline was found passed once and the verdict waits a turn ({@link pollBeforeFailing}). */
  private overdue = false;
  /**
   * Whether a deadline found passed waits one more scheduler turn before failing. Node runs
   * timers before it polls I/O, so a timer made late by a blocked event loop (a long GC, CPU
   * starvation) would otherwise judge a source whose elements already sit in its socket; the
   * turn lets the poll deliver them first. For deadlines over socket reads on a real clock;
   * off by default, so that on a virtual clock an element at the deadline stays too late.
   */
  protected readonly pollBeforeFailing: boolean = false;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly kind: TimeoutKind,
    protected readonly timeoutMs: number,
    private readonly scheduler: SchedulerLike,
  ) {
    super(actual, context);
  }

  protected get armed(): boolean {
    return !Number.isNaN(this.deadline);
  }

  /**
   * Starts the deadline `ms` from now (restarting it when already armed). `Infinity` never arms.
   * Returns the scheduler time it counted from (`NaN` when it did not arm).
   */
  protected arm(ms = this.timeoutMs): number {
    if (this.done || this.cancelled || this.timeoutMs === Infinity) return Number.NaN;
    const now = this.scheduler.now();
    this.deadline = now + ms;
    // Only a deadline moved into the future ends the grace turn: re-arming one already due (a
    // comment drained demand but moved no idle clock) must not grant another turn, or a source
    // that sends on every turn would never be judged.
    if (ms > 0) this.overdue = false;
    if (this.timer === undefined) this.schedule(ms);
    return now;
  }

  /** Time left before the armed deadline, ms (`NaN` when disarmed). */
  protected left(): number {
    return this.deadline - this.scheduler.now();
  }

  /** Forgets the deadline; the scheduled action, if any, finds none and stops. */
  protected disarm(): void {
    this.deadline = Number.NaN;
  }

  private schedule(delay: number): void {
    // The subscriber rides as the action's state: the action can reschedule itself for the rest.
    this.timer = this.scheduler.schedule(
      function (this: SchedulerAction<TimeoutSubscriber<T>>, subscriber?: TimeoutSubscriber<T>) {
        subscriber?.onTimer(this);
      },
      delay,
      this,
    );
  }

  private onTimer(action: SchedulerAction<TimeoutSubscriber<T>>): void {
    const deadline = this.deadline;
    if (Number.isNaN(deadline) || this.done || this.cancelled) {
      this.timer = undefined;
      return;
    }
    const left = deadline - this.scheduler.now();
    if (left > 0) {
      action.schedule(this, left);
      return;
    }
    if (this.pollBeforeFailing && !this.overdue) {
      this.overdue = true;
      action.schedule(this, 0);
      return;
    }
    this.overdue = false;
    this.timer = undefined;
    if (this.holdsAtDeadline()) return;
    this.deadline = Number.NaN;
    this.fail(new TimeoutError(this.kind, this.timeoutMs));
  }

  /**
   * Called when the deadline passed (after the grace turn): `true` keeps the subscriber from
   * failing, having disarmed or re-armed the deadline itself (a clock paused meanwhile). Default
   * `false`.
   */
  protected holdsAtDeadline(): boolean {
    return false;
  }

  /** Disarms and cancels the scheduled action itself (terminal signals, cancel). */
  private stopTimer(): void {
    this.deadline = Number.NaN;
    const timer = this.timer;
    this.timer = undefined;
    timer?.unsubscribe();
  }

  override onError(error: unknown): void {
    this.stopTimer();
    super.onError(error);
  }

  override onComplete(): void {
    this.stopTimer();
    super.onComplete();
  }

  override cancel(): void {
    this.stopTimer();
    super.cancel();
  }
}
