import { reportDropped } from '../discard';
import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/** How a sequence ended, as reported to {@link doFinally}. Mirrors Reactor `SignalType`. */
export type FinallySignal = 'complete' | 'error' | 'cancel';

/**
 * Calls `fn(signal)` exactly once after the sequence ended: after `onComplete` / `onError`
 * were delivered downstream, or after a cancel was sent upstream. Mirrors Reactor
 * `Flux#doFinally(Consumer<SignalType>)` (`FluxDoFinally`).
 *
 * ```
 * doFinally(fn)   --a--b--|        fn('complete') after the downstream saw |
 *                 --a--X           fn('error')
 *                 --a--(cancel)    fn('cancel')
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing. A throwing `fn` is reported as dropped.
 *
 * @param fn receives `'complete'`, `'error'` or `'cancel'`.
 * @example
 * source.pipe(doFinally((signal) => log.info({ outcome: signal })));
 */
export function doFinally<T>(fn: (signal: FinallySignal) => void): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new DoFinallySubscriber<T>(actual, context, fn));
}

class DoFinallySubscriber<T> extends OperatorSubscriber<T, T> {
  private ran = false;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly fn: (signal: FinallySignal) => void,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    this.actual.onNext(value);
  }

  override onError(error: unknown): void {
    const wasDone = this.done;
    super.onError(error);
    if (!wasDone) this.run('error');
  }

  override onComplete(): void {
    const wasDone = this.done;
    super.onComplete();
    if (!wasDone) this.run('complete');
  }

  override cancel(): void {
    const wasCancelled = this.cancelled;
    super.cancel();
    if (!wasCancelled) this.run('cancel');
  }

  private run(signal: FinallySignal): void {
    if (this.ran) return;
    this.ran = true;
    try {
      this.fn(signal);
    } catch (err) {
      reportDropped(err);
    }
  }
}
