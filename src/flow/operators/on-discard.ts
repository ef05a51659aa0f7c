import { Flow } from '../flow';
import { addDiscardHook } from './operator-subscriber';

/**
 * Registers a hook for every element that an operator upstream of this point drops, filters
 * out, evicts on overflow, or clears from its buffer on cancel or error. The hook travels up
 * the subscription in the {@link FlowContext}; when several are stacked, the one closest to
 * the discarding operator runs first, then the ones further downstream. Mirrors Reactor
 * `Flux#doOnDiscard(Class, Consumer)` (`Operators.discardLocalAdapter`), without the type filter.
 *
 * ```
 * source.pipe(onBackpressureBuffer({ maxItems: 1, overflow: 'drop-latest' }), onDiscard(log))
 * source      --a--b--c-->
 * hook        -----b--c-->   (downstream requested nothing)
 * ```
 *
 * Demand: passes requests and cancel through untouched.
 * Discard: is where discards go; a throwing hook is reported (never breaks the stream).
 *
 * @param hook receives each discarded element; release resources here (buffers, handles).
 *   `D` types what the hook expects (default `unknown`); like Reactor's `Class<R>` it is the
 *   caller's claim about what upstream operators may discard, not a runtime filter.
 * @example
 * source.pipe(limitRate(64), onDiscard((chunk) => pool.release(chunk)));
 */
export function onDiscard<D = unknown>(hook: (value: D) => void): <T>(source: Flow<T>) => Flow<T> {
  // Generic in T so that it fits any position of `pipe` without naming the element type.
  return <T>(source: Flow<T>) =>
    new Flow<T>((actual, context) => source.subscribeWith(actual, addDiscardHook(context, hook as (value: unknown) => void)));
}
