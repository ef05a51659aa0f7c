import { BufferOverflowError } from '../../errors';
import { discardAll } from '../discard';
import type { FlowOperator } from '../flow';
import { ArrayQueue } from '../queue';
import type { FlowContext, Subscriber } from '../types';
import { DrainSubscriber } from './drain-subscriber';
import { operator, requirePositiveCount } from './operator-subscriber';

/**
 * Splits downstream demand into batches: requests `highTide` upstream at subscription, then
 * `limit` more every time `limit` elements were emitted downstream, whatever the downstream
 * asked for. Mirrors Reactor `Flux#limitRate(int highTide, int lowTide)` (which is
 * `publishOn(Schedulers.immediate(), true, highTide, lowTide)`), including its limit rule
 * (`Operators.unboundedOrLimit`):
 *
 * - `lowTide` omitted: `limit = highTide - (highTide >> 2)` (75%);
 * - `0 < lowTide < highTide`: `limit = lowTide`;
 * - `lowTide <= 0`: `limit = highTide` (replenish only when a whole batch was emitted);
 * - `lowTide >= highTide`: the 75% rule.
 *
 * ```
 * limitRate(4)    upstream request: 4 ........ 3 ....... 3
 * source          --a--b--c--d----------e--f--g--------
 * downstream      --a--b--c--|(request 3 after c)
 * ```
 *
 * Demand: `highTide` once at subscription, then `limit` after every `limit` emissions;
 * `limitRate(Infinity)` requests `Infinity` once and never again. Upstream errors are delivered
 * after the queue drains (delay-error), as Reactor does.
 * Discard: queued elements on cancel; an element the upstream sent beyond the requested
 * `highTide` (a misbehaving source) is discarded and signals `BufferOverflowError`.
 *
 * @param highTide the upstream batch size (elements), a positive integer or `Infinity`.
 * @param lowTide the replenish threshold (elements); see the rule above.
 * @throws RangeError when the operator is built with `highTide <= 0` or a non-integer tide.
 * @example
 * fromIterable(range).pipe(limitRate(10, 2)); // downstream request(14) → upstream 10, 2, 2, 2, 2, 2, 2, 2
 */
export function limitRate<T>(highTide: number, lowTide?: number): FlowOperator<T, T> {
  requirePositiveCount('limitRate', 'highTide', highTide);
  if (lowTide !== undefined && !Number.isInteger(lowTide)) {
    throw new RangeError(`limitRate: lowTide must be an integer, got ${String(lowTide)}`);
  }
  const prefetch = highTide >= Number.MAX_SAFE_INTEGER ? Infinity : highTide;
  const limit = replenishLimit(prefetch, lowTide);
  return operator<T, T>((actual, context) => new LimitRateSubscriber<T>(actual, context, prefetch, limit));
}

/** Reactor `Operators.unboundedOrLimit(prefetch, lowTide)`. */
function replenishLimit(prefetch: number, lowTide: number | undefined): number {
  if (prefetch === Infinity) return Infinity;
  const seventyFive = prefetch - Math.floor(prefetch / 4);
  if (lowTide === undefined) return seventyFive;
  if (lowTide <= 0) return prefetch;
  if (lowTide >= prefetch) return seventyFive;
  return lowTide;
}

class LimitRateSubscriber<T> extends DrainSubscriber<T, T> {
  private readonly queue = new ArrayQueue<T>();
  private produced = 0;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly prefetch: number,
    private readonly limit: number,
  ) {
    super(actual, context);
  }

  protected override afterSubscribe(): void {
    this.upstream.request(this.prefetch);
  }

  onNext(value: T): void {
    if (this.done || this.cancelled) {
      this.discard(value);
      return;
    }
    if (this.queue.length >= this.prefetch) {
      // The source emitted more than was requested (Reactor: BACKPRESSURE_ERROR_QUEUE_FULL).
      this.discard(value);
      this.upstream.cancel();
      this.onError(new BufferOverflowError('limitRate: the upstream emitted more than requested'));
      return;
    }
    if (this.wip === 0 && this.requested > 0 && this.queue.length === 0) {
      // Fast path: nothing queued and demand waiting, so the element skips the queue.
      this.wip = 1;
      if (this.requested !== Infinity) this.requested--;
      this.actual.onNext(value);
      if (++this.produced === this.limit) {
        this.produced = 0;
        this.upstream.request(this.limit);
      }
      if (this.wip === 1) this.wip = 0;
      else this.drainLoop(1); // signals arrived while emitting
      return;
    }
    this.queue.push(value);
    this.drain();
  }


  protected override clear(): void {
    discardAll(this.context, this.queue.drainAll());
  }

  protected override drainLoop(missed: number): void {
    for (;;) {
      while (this.requested > 0) {
        const empty = this.queue.length === 0;
        if (this.checkTerminated(this.done, empty)) return;
        if (empty) break;
        const value = this.queue.shift() as T;
        if (this.requested !== Infinity) this.requested--;
        this.actual.onNext(value);
        if (++this.produced === this.limit) {
          this.produced = 0;
          this.upstream.request(this.limit);
        }
      }
      if (this.checkTerminated(this.done, this.queue.length === 0)) return;
      missed = this.wip -= missed;
      if (missed === 0) return;
    }
  }

  private checkTerminated(done: boolean, empty: boolean): boolean {
    if (this.cancelled) {
      this.clear();
      return true;
    }
    if (done && empty) {
      if (this.failed) this.actual.onError(this.error);
      else this.actual.onComplete();
      return true;
    }
    return false;
  }
}
