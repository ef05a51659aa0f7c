import { Flow } from '../flow/flow';
import type { SseEvent } from '../sse/codec/parser';
import { resolveOptions, type ConnectSseOptions, type SseResponseInfo } from './options';
import { SseSession } from './session';

/** An SSE stream whose first response already arrived; see {@link openSse}. */
export interface OpenSseStream {
  /** The first response (200-family `text/event-stream`, or 204: then `events` completes at once). */
  readonly response: SseResponseInfo;
  /**
   * The events, reconnecting as {@link connectSse} does. Subscribe once (a second subscriber
   * gets an error). Nothing is read from the socket before the subscriber requests.
   */
  readonly events: Flow<SseEvent>;
  /** Releases the stream without subscribing (e.g. the downstream client left). Idempotent. */
  cancel(): void;
}

/**
 * Connects eagerly and resolves once the first response is usable, so a proxy can commit its own
 * response headers only then: an error before the stream (401, a non-SSE body, attempts spent on
 * 429/503/network errors) rejects, with the same typed errors as {@link connectSse}, and can still
 * be answered as an HTTP error. After that, `events` behaves as `connectSse(url, options)`:
 * mid-stream failures reconnect with `Last-Event-ID`, the partial event is discarded, and the
 * new connection continues after the last delivered event (when the upstream honours
 * `Last-Event-ID`), so the downstream sees no gap and no duplicate.
 *
 * Pass the downstream client's own `Last-Event-ID` header as `options.lastEventId` to resume
 * a stream the client was reading through a previous proxy connection.
 *
 * Demand: as `connectSse`; before `events` is subscribed the body is not read.
 * Discard: as `connectSse`.
 *
 * @returns a promise of the open stream; rejects with `SseHttpError`, `SseConnectionError`,
 *   `TimeoutError` or `signal.reason`.
 * @example
 * const upstream = await openSse(config.url, { lastEventId: req.get('last-event-id'), signal, maxAttempts: 5 });
 * sendFlow(res, upstream.events.pipe(reencode), options);
 */
export function openSse(url: string | URL, options: ConnectSseOptions = {}): Promise<OpenSseStream> {
  let session: SseSession;
  try {
    session = new SseSession(resolveOptions(url, options));
  } catch (err) {
    return Promise.reject(err);
  }
  const events = new Flow<SseEvent>((actual) => session.attach(actual));
  return new Promise<OpenSseStream>((resolve, reject) => {
    session.onFirstOpen = (response) => {
      session.onTerminate = undefined;
      resolve({ response, events, cancel: () => session.cancel() });
    };
    session.onTerminate = (failed, error) => {
      session.onFirstOpen = undefined;
      if (failed) reject(error);
    };
    session.start();
  });
}
