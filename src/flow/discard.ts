import { config as rxConfig } from 'rxjs';
import type { FlowContext } from './types';

/** An empty discard context, shared to avoid an allocation per subscription. */
export const EMPTY_CONTEXT: FlowContext = Object.freeze({});

/**
 * Hands one discarded element to the context's hook (Reactor `Operators.onDiscard`).
 * A throwing hook must not break the stream, so its error is swallowed after being reported.
 */
export function discard(context: FlowContext, value: unknown): void {
  const hook = context.onDiscard;
  if (hook === undefined) return;
  try {
    hook(value);
  } catch (err) {
    reportDropped(err);
  }
}

/** Discards every element of a queue or iterable, in order (Reactor `Operators.onDiscardQueueWithClear`). */
export function discardAll(context: FlowContext, values: Iterable<unknown>): void {
  if (context.onDiscard === undefined) return;
  for (const v of values) discard(context, v);
}

/**
 * Reports an error that cannot be delivered (after a terminal signal, or thrown by a hook),
 * like Reactor's `Hooks.onErrorDropped`, whose default logs instead of crashing: here it is
 * RxJS's `config.onUnhandledError` when set, otherwise a process warning. Asynchronous, so it
 * never unwinds the emitting stack.
 */
export function reportDropped(err: unknown): void {
  setTimeout(() => {
    const handler = rxConfig.onUnhandledError;
    if (handler) handler(err);
    // A string, not the error itself: an Error from another realm (vm, jest) fails emitWarning's check.
    else process.emitWarning(`dropped error: ${describe(err)}`, 'TidegateDroppedError');
  });
}

/**
 * Reports an error no observer handles, as RxJS does (`reportUnhandledError`): rethrown
 * asynchronously unless `config.onUnhandledError` is set.
 */
export function reportUnhandled(err: unknown): void {
  setTimeout(() => {
    const handler = rxConfig.onUnhandledError;
    if (handler) handler(err);
    else throw err;
  });
}

function describe(err: unknown): string {
  const e = err as { stack?: unknown; message?: unknown } | null;
  if (e && typeof e.stack === 'string') return e.stack;
  if (e && typeof e.message === 'string') return e.message;
  return String(err);
}
