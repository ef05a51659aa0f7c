import { discard, reportDropped } from '../discard';
import { Flow, type FlowOperator } from '../flow';
import type { FlowContext, Subscriber, Subscription } from '../types';

/** Stands in for the upstream before `onSubscribe`; ignores everything. */
const NOT_SUBSCRIBED: Subscription = Object.freeze({ request() {}, cancel() {} });

/**
 * The subscription bookkeeping every operator shares: the downstream `actual`, the `upstream`
 * subscription, the discard `context`, and the `done` / `cancelled` flags. Mirrors the shape of
 * Reactor's `InnerOperator` (a `CoreSubscriber` that is also the downstream's `Subscription`).
 *
 * Defaults pass everything through: `request` and `cancel` go upstream, terminal signals go
 * downstream once. Subclasses override what their operator changes.
 */
export abstract class OperatorSubscriber<I, O> implements Subscriber<I>, Subscription {
  // The fields are `declare`d and set in the constructor: a class field initializer defines its
  // property (define semantics), and V8 runs those defines on its slow path once the base sees
  // more than four shapes, i.e. here, where every operator's subscriber is a subclass (about 1 µs
  // per subscriber, against tens of ns for assignments).
  /** The downstream subscriber. */
  protected declare readonly actual: Subscriber<O>;
  /** The discard context of the subscription. */
  protected declare readonly context: FlowContext;
  /** The upstream subscription; a no-op placeholder until `onSubscribe`. */
  protected declare upstream: Subscription;
  /** True once the upstream terminated, or this operator terminated the sequence itself. */
  protected declare done: boolean;
  /** True once the downstream cancelled. */
  protected declare cancelled: boolean;
  private declare subscribed: boolean;

  constructor(actual: Subscriber<O>, context: FlowContext) {
    this.actual = actual;
    this.context = context;
    this.upstream = NOT_SUBSCRIBED;
    this.done = false;
    this.cancelled = false;
    this.subscribed = false;
  }

  onSubscribe(s: Subscription): void {
    if (this.subscribed) {
      s.cancel(); // rule 2.5
      return;
    }
    this.subscribed = true;
    this.upstream = s;
    this.actual.onSubscribe(this);
    if (!this.cancelled) this.afterSubscribe();
  }

  /** Runs after the downstream got its subscription (Reactor requests its prefetch here). */
  protected afterSubscribe(): void {}

  abstract onNext(value: I): void;

  onError(error: unknown): void {
    if (this.done) {
      if (!this.cancelled) reportDropped(error);
      return;
    }
    this.done = true;
    this.actual.onError(error);
  }

  onComplete(): void {
    if (this.done) return;
    this.done = true;
    this.actual.onComplete();
  }

  request(n: number): void {
    this.upstream.request(n);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.upstream.cancel();
  }

  /** Cancels the upstream and signals `error` through `onError` (Reactor `Operators.onOperatorError`). */
  protected fail(error: unknown): void {
    this.upstream.cancel();
    this.onError(error);
  }

  /** Hands one element this operator drops to the discard context (Reactor `Operators.onDiscard`). */
  protected discard(value: unknown): void {
    discard(this.context, value);
  }
}

/**
 * Builds a Flow operator from a subscriber factory: each subscription to the result subscribes
 * one `make(actual, context)` to the source with the same discard context.
 */
export function operator<I, O>(make: (actual: Subscriber<O>, context: FlowContext) => Subscriber<I>): FlowOperator<I, O> {
  return (source) => new Flow<O>((actual, context) => source.subscribeWith(make(actual, context), context));
}

/**
 * Returns a context whose discard hook runs `hook` first and then the hook already in
 * `context`, each isolated from the other's errors. Mirrors Reactor
 * `Operators.discardLocalAdapter` (`safeConsumer.andThen(existing)`): the hook closest to the
 * discarding operator runs first.
 */
export function addDiscardHook(context: FlowContext, hook: (value: unknown) => void): FlowContext {
  const outer = context.onDiscard;
  const safe = (value: unknown): void => {
    try {
      hook(value);
    } catch (err) {
      reportDropped(err);
    }
  };
  if (outer === undefined) return { ...context, onDiscard: safe };
  return {
    ...context,
    onDiscard: (value: unknown) => {
      safe(value);
      try {
        outer(value);
      } catch (err) {
        reportDropped(err);
      }
    },
  };
}

/** Throws a RangeError at build time unless `value` is a positive integer or `Infinity`. */
export function requirePositiveCount(operatorName: string, param: string, value: number): void {
  if (!(typeof value === 'number' && value > 0 && (value === Infinity || Number.isInteger(value)))) {
    throw new RangeError(`${operatorName}: ${param} must be a positive integer or Infinity, got ${String(value)}`);
  }
}

/** Longest delay a Node timer honours (2^31 - 1 ms); longer ones fire at once. */
export const MAX_TIMER_MS = 2147483647;

/**
 * Throws a RangeError at build time unless `ms` is a positive number of milliseconds no longer
 * than {@link MAX_TIMER_MS}, or `Infinity` (no deadline).
 */
export function requireTimeoutMs(operatorName: string, ms: number): void {
  if (!(typeof ms === 'number' && ms > 0 && (ms === Infinity || ms <= MAX_TIMER_MS))) {
    throw new RangeError(`${operatorName}: ms must be > 0 and <= ${MAX_TIMER_MS}, or Infinity; got ${String(ms)}`);
  }
}
