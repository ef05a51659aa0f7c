/**
 * The Reactive Streams protocol that every tidegate stage speaks internally.
 *
 * Mirrors `org.reactivestreams.Subscriber` / `Subscription` (Reactive Streams 1.0.4), which
 * Project Reactor's `CoreSubscriber` extends. A stage receives `onSubscribe` once, then at most
 * as many `onNext` as were requested, then at most one of `onError` / `onComplete`.
 */

/**
 * The link between a subscriber and its upstream: how demand flows backwards.
 * Mirrors Reactive Streams `Subscription`.
 */
export interface Subscription {
  /**
   * Adds `n` to the outstanding demand. `n` is a positive integer or `Infinity` (unbounded).
   * Sums saturate at `Infinity`; see {@link addDemand}.
   */
  request(n: number): void;
  /** Asks the upstream to stop and release resources. Idempotent. */
  cancel(): void;
}

/**
 * Reactor's discard context, travelling upstream with the subscription like Reactor's
 * `Context` key `Hooks.KEY_ON_DISCARD`.
 */
export interface FlowContext {
  /** Receives every element an operator drops, evicts or clears on cancel/error. */
  readonly onDiscard?: ((value: unknown) => void) | undefined;
}

/**
 * A demand-aware subscriber. Mirrors Reactive Streams `Subscriber` (Reactor `CoreSubscriber`).
 */
export interface Subscriber<T> {
  onSubscribe(subscription: Subscription): void;
  onNext(value: T): void;
  onError(error: unknown): void;
  onComplete(): void;
}

/**
 * What a {@link Flow} does when subscribed: call `subscriber.onSubscribe` (synchronously,
 * before any element), then emit only what was requested. Mirrors `Publisher#subscribe`
 * with Reactor's context passed alongside.
 */
export type Publisher<T> = (subscriber: Subscriber<T>, context: FlowContext) => void;

/**
 * The handle {@link Flow.subscribeWithDemand} returns. Mirrors Reactive Streams `Subscription`
 * at the public boundary, where requests are validated (rule 3.9).
 */
export interface FlowSubscription extends Subscription {
  /**
   * Adds demand. `n` must be a positive integer or `Infinity`; anything else (`0`, negative,
   * `NaN`, fractions) cancels the upstream and signals `error(RangeError)` (Reactive Streams
   * rule 3.9, as Reactor's `StrictSubscriber`). A no-op after `cancel()` or a terminal signal.
   */
  request(n: number): void;
  /** Stops the stream and releases every stage's resources. Idempotent. */
  cancel(): void;
}

/**
 * The callbacks for {@link Flow.subscribeWithDemand}. All optional (an explicit `undefined`
 * counts as absent); an `error` without a handler is reported like RxJS reports unhandled errors.
 * Each is called on the observer object (`this` is the observer).
 */
export interface FlowObserver<T> {
  /** Called synchronously, before any upstream request, with the subscription to request on. */
  onSubscribe?: ((subscription: FlowSubscription) => void) | undefined;
  next?: ((value: T) => void) | undefined;
  error?: ((error: unknown) => void) | undefined;
  complete?: (() => void) | undefined;
}
