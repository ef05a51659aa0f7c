/**
 * One `'abort'` listener per signal, fanning out to any number of watchers.
 *
 * Every running stream watches the gateway's shutdown signal. Node's `EventTarget` walks its
 * whole listener list on each `addEventListener` (to ignore duplicates) and `removeEventListener`,
 * so with one listener per stream, opening or closing a stream costs time in proportion to the
 * streams already open (quadratic over a burst of thousands). Here adding and removing a watcher
 * is a `Set` operation.
 */
const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts (not if it already has: the caller checks
 * `signal.aborted` first, as with `addEventListener`). Returns the function that stops watching.
 * Watchers run in the order they were added; one that throws does not stop the others (the error
 * is rethrown asynchronously, as an `EventTarget` listener's would be reported).
 */
export function watchAbort(signal: AbortSignal, onAbort: () => void): () => void {
  let set = watchers.get(signal);
  if (set === undefined) {
    const created = new Set<() => void>();
    watchers.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        const all = [...created];
        created.clear();
        for (const watcher of all) {
          try {
            watcher();
          } catch (err) {
            queueMicrotask(() => {
              throw err;
            });
          }
        }
      },
      { once: true },
    );
    set = created;
  }
  const own = set;
  own.add(onAbort);
  return () => {
    own.delete(onAbort);
  };
}
