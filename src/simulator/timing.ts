/**
 * The simulator's waits: a timer that an exchange's end cancels, and a turn of the event loop.
 * Both resolve `false` once the exchange has ended, so a caller stops at once.
 */

/** Resolves after `ms`, or early with `false` when `signal` aborts. Leaves no timer or listener. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves on the next `setImmediate` turn: `true` unless `signal` aborted meanwhile. */
export function yieldToLoop(signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => setImmediate(() => resolve(!signal.aborted)));
}
