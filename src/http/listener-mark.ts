/** Which listeners an emitter got since a moment: what `releaseFetchListeners` (node-hooks.ts) takes back. */
import http from 'node:http';

/** The events node-fetch 2 listens to on its `ClientRequest`, and on the response. */
const REQUEST_EVENTS = ['error', 'response', 'socket'] as const;
const RESPONSE_EVENTS = ['end', 'close', 'error'] as const;
/** A marked event without listeners (no copy of an empty list per mark). */
const NONE: readonly unknown[] = Object.freeze([]);

/**
 * The listeners an emitter had at one moment for the events node-fetch 2 listens to (see
 * {@link markListeners}): the events, then each one's listeners in the same order. Two per
 * upstream call, so a tuple rather than a `Map` of pairs.
 */
export type ListenerMark = readonly [events: readonly string[], ...before: ReadonlyArray<readonly unknown[]>];

/** Marks the `'error'`, `'response'` and `'socket'` listeners of a `ClientRequest`, or `'end'`, `'close'` and `'error'` of a response, as they are now. */
export function markListeners(emitter: http.ClientRequest | http.IncomingMessage): ListenerMark {
  const events = emitter instanceof http.IncomingMessage ? RESPONSE_EVENTS : REQUEST_EVENTS;
  return [events, listenersOf(emitter, events[0]), listenersOf(emitter, events[1]), listenersOf(emitter, events[2])];
}

function listenersOf(emitter: http.ClientRequest | http.IncomingMessage, event: string): readonly unknown[] {
  return emitter.listenerCount(event) === 0 ? NONE : emitter.rawListeners(event);
}

/** Removes the listeners `emitter` got for the marked events since `mark`. */
export function dropListenersSince(emitter: http.ClientRequest | http.IncomingMessage, mark: ListenerMark): void {
  const events = mark[0];
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as string;
    if (emitter.listenerCount(event) === 0) continue;
    const before = mark[i + 1] as readonly unknown[];
    for (const listener of emitter.rawListeners(event)) if (!before.includes(listener)) emitter.removeListener(event, listener as () => void);
  }
}
