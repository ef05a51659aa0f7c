import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Transforms each element with `project`, one output per input. Mirrors Reactor
 * `Flux#map(Function)` (`FluxMap`); a throwing `project` cancels the upstream and signals
 * the error.
 *
 * ```
 * map(x => x * 10)   --1--2--3--|
 *                    --10-20-30-|
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: nothing.
 *
 * @param project the mapping; receives the element and its 0-based index.
 * @example
 * events.pipe(map((e) => e.data));
 */
export function map<T, R>(project: (value: T, index: number) => R): FlowOperator<T, R> {
  return operator<T, R>((actual, context) => new MapSubscriber<T, R>(actual, context, project));
}

class MapSubscriber<T, R> extends OperatorSubscriber<T, R> {
  private index = 0;

  constructor(
    actual: Subscriber<R>,
    context: FlowContext,
    private readonly project: (value: T, index: number) => R,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    let out: R;
    try {
      out = this.project(value, this.index++);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.actual.onNext(out);
  }
}
