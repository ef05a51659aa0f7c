import { Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';

/** One scheduled piece of work of {@link timerScheduler}: a `setTimeout`, moved by `schedule()`. */
class TimerAction<T> extends Subscription implements SchedulerAction<T> {
  private timer: NodeJS.Timeout | undefined;
  private state: T | undefined;

  constructor(private readonly work: (this: SchedulerAction<T>, state?: T) => void) {
    super();
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    this.state = state;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), delay);
    return this;
  }

  private run(): void {
    this.timer = undefined;
    if (!this.closed) this.work.call(this, this.state);
  }

  override unsubscribe(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.state = undefined;
    super.unsubscribe();
  }
}

/**
 * RxJS's `asyncScheduler` for one-shot delays, on one plain `setTimeout` per action: the same
 * clock (`Date.now()`), the same `schedule(work, delay, state)` contract (the work may call
 * `this.schedule(state, delay)` to run again; `unsubscribe()` cancels). `asyncScheduler` keeps a
 * `setInterval` per action so that periodic work can reuse it, and costs an interval's
 * bookkeeping and an argument spread per action; a deadline that fires once, or moves rarely
 * (the timeout operators'), needs none of it.
 *
 * @example
 * body.pipe(idleTimeout(120_000, timerScheduler));
 */
export const timerScheduler: SchedulerLike = {
  now: () => Date.now(),
  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
    return new TimerAction<T>(work).schedule(state, delay);
  },
};
