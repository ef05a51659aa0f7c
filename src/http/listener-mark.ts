/** Which listeners an emitter got since a moment: what `releaseFetchListeners` (node-hooks.ts) takes back. */
import http from 'node:http';

/** The listeners an emitter had at one moment for the events node-fetch 2 listens to (see {@link markListeners}). */
export type ListenerMark = Map<string, ReadonlyArray<unknown>>;
/** Marks the `'error'`, `'response'` and `'socket'` listeners of a `ClientRequest`, or `'end'`, `'close'` and `'error'` of a response, as they are now. */
export function markListeners(emitter: http.ClientRequest | http.IncomingMessage): ListenerMark {
  const events = emitter instanceof http.IncomingMessage ? ['end', 'close', 'error'] : ['error', 'response', 'socket'];
  return new Map(events.map((e) => [e, emitter.rawListeners(e)]));
}

/** Removes the listeners `emitter` got for the marked events since `mark`. */
export function dropListenersSince(emitter: http.ClientRequest | http.IncomingMessage, mark: ListenerMark): void {
  for (const [event, before] of mark) {
    for (const listener of emitter.rawListeners(event)) if (!before.includes(listener)) emitter.removeListener(event, listener as () => void);
  }
}
