import type { FlowOperator } from '../flow';
import type { FlowContext, Subscriber } from '../types';
import { OperatorSubscriber, operator } from './operator-subscriber';

/**
 * Emits only the elements that pass `predicate`; each rejected element is replaced by a
 * `request(1)` upstream, so the downstream still receives what it asked for. Mirrors Reactor
 * `Flux#filter(Predicate)` (`FluxFilter`), including the discard of rejected elements.
 *
 * ```
 * filter(x => x % 2 === 0)   downstream request(2) → upstream request(2), request(1), request(1)
 * source      --1--2--3--4-->
 * downstream  -----2-----4-->
 * ```
 *
 * Demand: passes requests through, plus `request(1)` for every rejected element.
 * Discard: every rejected element (after the replenishing `request(1)`), and the element whose
 * predicate threw (the upstream is cancelled and the error signalled).
 *
 * @param predicate receives the element and its 0-based index.
 * @example
 * events.pipe(filter((e) => e.type !== 'ping'));
 */
export function filter<T, S extends T>(predicate: (value: T, index: number) => value is S): FlowOperator<T, S>;
export function filter<T>(predicate: (value: T, index: number) => boolean): FlowOperator<T, T>;
export function filter<T>(predicate: (value: T, index: number) => boolean): FlowOperator<T, T> {
  return operator<T, T>((actual, context) => new FilterSubscriber<T>(actual, context, predicate));
}

class FilterSubscriber<T> extends OperatorSubscriber<T, T> {
  private index = 0;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly predicate: (value: T, index: number) => boolean,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    let pass: boolean;
    try {
      pass = this.predicate(value, this.index++);
    } catch (err) {
      this.fail(err);
      this.discard(value);
      return;
    }
    if (pass) {
      this.actual.onNext(value);
    } else {
      this.upstream.request(1);
      this.discard(value);
    }
  }
}
