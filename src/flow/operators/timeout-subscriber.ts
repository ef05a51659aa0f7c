import { type SchedulerLike, type Subscription as RxSubscription } from 'rxjs';
import { TimeoutError, type TimeoutKind } from '../../errors';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber } from './operator-subscriber';

/**
 * Shared timer bookkeeping of the timeout operators: one deadline at a time on an RxJS
 * `SchedulerLike` (so `TestScheduler` / `VirtualTimeScheduler` drive it in tests). When the
 * deadline passes, the upstream is cancelled and `TimeoutError(kind, timeoutMs)` signalled.
 * Terminal signals and cancel disarm it.
 */
export abstract class TimeoutSubscriber<T> extends OperatorSubscriber<T, T> {
  private timer: RxSubscription | undefined;

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
    return this.timer !== undefined;
  }

  /** Starts the deadline (restarting it when already armed). `Infinity` never arms. */
  protected arm(): void {
    this.disarm();
    if (this.done || this.cancelled || this.timeoutMs === Infinity) return;
    this.timer = this.scheduler.schedule(() => {
      this.timer = undefined;
      if (this.done || this.cancelled) return;
      this.fail(new TimeoutError(this.kind, this.timeoutMs));
    }, this.timeoutMs);
  }

  protected disarm(): void {
    const timer = this.timer;
    this.timer = undefined;
    timer?.unsubscribe();
  }

  override onError(error: unknown): void {
    this.disarm();
    super.onError(error);
  }

  override onComplete(): void {
    this.disarm();
    super.onComplete();
  }

  override cancel(): void {
    this.disarm();
    super.cancel();
  }
}
