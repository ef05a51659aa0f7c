import { addDemand } from '../demand';
import { OperatorSubscriber } from './operator-subscriber';

/**
 * The bookkeeping of every operator that holds elements and emits them from a drain loop
 * (`limitRate`, `onBackpressureBuffer`, `onBackpressureLatest`): summed downstream demand, the
 * work-in-progress counter that serialises the loop against re-entrant signals, and a terminal
 * signal parked until the loop delivers it. Mirrors the `WIP` / `requested` / `done` / `error`
 * fields Reactor repeats in each of `FluxPublishOn`, `FluxOnBackpressureBuffer*` and
 * `FluxOnBackpressureLatest`.
 */
export abstract class DrainSubscriber<I, O> extends OperatorSubscriber<I, O> {
  /** Downstream demand not yet served (`Infinity` when unbounded). */
  protected requested = 0;
  /** Signals that arrived while the loop ran; the loop runs again until it is back to 0. */
  protected wip = 0;
  /** True when the parked terminal signal is an error. */
  protected failed = false;
  protected error: unknown = undefined;

  override onError(error: unknown): void {
    if (this.done) {
      super.onError(error); // reports it as dropped
      return;
    }
    this.failed = true;
    this.error = error;
    this.done = true;
    this.drain();
  }

  override onComplete(): void {
    if (this.done) return;
    this.done = true;
    this.drain();
  }

  override request(n: number): void {
    this.requested = addDemand(this.requested, n);
    this.drain();
  }

  override cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.upstream.cancel();
    if (this.wip++ === 0) this.clear();
  }

  /** Runs the drain loop unless it is already running (then the running loop goes round again). */
  protected drain(): void {
    if (this.wip++ !== 0) return;
    this.drainLoop(1);
  }

  /**
   * Emits while demand and held elements allow and delivers the parked terminal signal; retires
   * `missed` work units with `missed = this.wip -= missed` until none are left.
   */
  protected abstract drainLoop(missed: number): void;

  /** Discards everything held (on cancel, or when an error cuts ahead). */
  protected abstract clear(): void;
}
