import { addDemand } from '../demand';
import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Requests unbounded demand upstream and drops every element that arrives while the
 * downstream has no outstanding demand. Mirrors Reactor `Flux#onBackpressureDrop(Consumer)`
 * (`FluxOnBackpressureDrop`): completion and errors are forwarded at once, never gated by demand.
 *
 * ```
 * onBackpressureDrop()   (downstream requested 1)
 * source      --a--b--c--|
 * downstream  --a--------|     b, c dropped
 * ```
 *
 * Demand: `Infinity` upstream at subscription; downstream requests are only counted.
 * Discard: every dropped element, after `onDrop`. A throwing `onDrop` cancels the upstream and
 * signals its error.
 *
 * @param onDrop receives each dropped element.
 * @example
 * ticks.pipe(onBackpressureDrop((t) => dropped++));
 */
export function onBackpressureDrop<T>(onDrop?: (value: T) => void): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new DropSubscriber<T>(actual, context, onDrop));
}

class DropSubscriber<T> extends OperatorSubscriber<T, T> {
  private requested = 0;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly onDrop: ((value: T) => void) | undefined,
  ) {
    super(actual, context);
  }

  protected override afterSubscribe(): void {
    this.upstream.request(Infinity);
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    if (this.requested > 0) {
      if (this.requested !== Infinity) this.requested--;
      this.actual.onNext(value);
      return;
    }
    try {
      this.onDrop?.(value);
    } catch (err) {
      this.fail(err);
    }
    this.discard(value);
  }

  override request(n: number): void {
    this.requested = addDemand(this.requested, n);
  }
}
