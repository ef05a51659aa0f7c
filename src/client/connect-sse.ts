import { Flow } from '../flow/flow';
import type { SseEvent } from '../sse/codec/parser';
import { resolveOptions, type ConnectSseOptions, type RouteSseOptions } from './options';
import { SseSession } from './session';

export type { ConnectSseOptions, SseConnectingInfo, SseReconnectInfo, SseResponseInfo } from './options';

/**
 * Opens a server-sent events stream as a `Flow<SseEvent>`: the EventSource of WHATWG HTML §9.2
 * (reconnection, `retry:`, `Last-Event-ID`, 204 = stop) with demand, bounded buffers and the
 * failure handling an HTTP client for model servers needs.
 *
 * The request is sent on subscribe; the body is read only while events are requested, so a
 * subscriber that stops requesting pauses the socket and TCP pushes back on the server.
 *
 * ```
 * server:   --a--b--c-X          (TCP drop mid-event)   --d--e--[DONE]|
 * flow:     --a--b--c----(backoff, Last-Event-ID: c)-----d--e--[DONE]|
 * ```
 *
 * Responses: 2xx `text/event-stream` streams; 204 completes (stop reconnecting, as EventSource);
 * 429 and 5xx wait (at least `Retry-After`) and retry; any other status, or another content
 * type, fails at once with {@link SseHttpError} (status, capped body).
 * Reconnection: after a network error, an EOF without a terminal event, or an idle timeout;
 * exponential backoff with full jitter from the server's `retry:` (else `initialDelayMs`),
 * capped at `maxDelayMs`, at most `maxAttempts` failures in a row and `maxReconnects` reconnects in
 * all (see `backoffGrowth` for a delay that grows across delivered events). The partial event of a dropped
 * connection is discarded (§9.2.6), the next request carries `Last-Event-ID`, and the new
 * connection's events keep the last event ID until the server sends another.
 *
 * Demand: events are delivered only as requested; the socket is read one chunk at a time while
 * demand is unmet and paused otherwise (bounded by the stream and kernel buffers).
 * Discard: a partial event at a dropped connection; events parsed beyond demand are held only
 * within one chunk (see `sseDecode`). Cancel, error and completion without a terminal event
 * release the socket (abort), every timer and the `signal` listener.
 * After a terminal event (`isTerminal`) the flow completes at once (timers and the `signal`
 * listener released), then the response body is read to its end and dropped, nothing more is
 * delivered and nothing reconnects, so the socket returns to the keep-alive pool: what most
 * servers do (OpenAI ends the body right after `data: [DONE]`). A response still open 1000 ms
 * later is aborted (socket destroyed; the timer is unref'd and cleared when the body ends or
 * fails). An error or EOF during that drain is not signalled; a cancel after completion, or an
 * abort of `signal`, does not cut it short.
 * Errors: {@link SseHttpError}; {@link SseConnectionError} (network error / EOF with reconnect off
 * or attempts spent; `cause` set); `TimeoutError` (`kind: 'idle'`) when idle with reconnect off or
 * attempts spent; {@link SseLimitError}; `signal.reason` on abort.
 *
 * @param url the event stream URL.
 * @param options request, reconnection and limits; see {@link ConnectSseOptions}.
 * @example
 * const events = connectSse('http://127.0.0.1:8000/v1/chat/completions', {
 *   method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req),
 *   reconnect: false, isTerminal: (e) => e.data === '[DONE]',
 * });
 * events.subscribe((e) => console.log(e.data));
 */
export function connectSse(url: string | URL, options: ConnectSseOptions = {}): Flow<SseEvent> {
  return connectRouteSse(url, options, {});
}

/** @internal {@link connectSse} for a gateway route (see {@link RouteSseOptions}). */
export function connectRouteSse(url: string | URL, options: ConnectSseOptions, route: RouteSseOptions): Flow<SseEvent> {
  const resolved = resolveOptions(url, options, route);
  return new Flow<SseEvent>((actual) => {
    const session = new SseSession(resolved);
    session.attach(actual);
    session.start();
  });
}
