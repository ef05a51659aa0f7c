import type { Response } from 'express';
import type { ServerResponse } from 'node:http';
import { ByteBudget } from '../flow/budget';
import type { Flow } from '../flow/flow';
import { DemandBridge } from './bridge/demand-bridge';
import type { BridgeElement, BridgeState, SendFlowOptions, StreamHandle, StreamResult } from './bridge/types';

export type { BridgeElement, BridgeState, SendFlowOptions, StreamHandle, StreamOutcome, StreamResult } from './bridge/types';
export { errorBody, formatError, sendHttpError } from './error-shapes';

/**
 * Streams a Flow to an HTTP response as Server-Sent Events with real backpressure: it requests a
 * batch of `prefetch` elements, writes each (same-tick elements batched in one `writev` by
 * `cork()`), and requests nothing while `res.write()` returns `false`, until `'drain'`. The
 * wait ends on `'drain'`, `'close'`, `'error'` or the abort signal.
 *
 * Response contract: `Content-Type: text/event-stream; charset=utf-8`,
 * `Cache-Control: no-cache, no-transform` (no-transform keeps `compression()` out),
 * `X-Accel-Buffering: no`, `Connection: keep-alive`; headers flushed once the flow was
 * subscribed. Ends: completion → `terminalEvent` then end; an error before headers → HTTP
 * error; after → `event: error` `{"code","message"}`; client gone (`'close'` before finish)
 * → cancel, which reaches the source and aborts the upstream request.
 *
 * Errors signalled: `ERR_TIDEGATE_OVERFLOW` (budget), `ERR_TIDEGATE_STALLED` (no drain for
 * `stallTimeoutMs`: the error event is queued behind the unsent bytes and the connection is not
 * reused; the response ends once the reader has taken everything, or the socket is reset after
 * another `stallTimeoutMs` without progress, to release kernel buffers).
 */
export function sendFlow(res: Response | ServerResponse, flow: Flow<BridgeElement>, options: SendFlowOptions = {}): StreamHandle {
  const target = res as ServerResponse;
  if (STREAMING.has(target)) return refused(new TypeError('sendFlow: this response already carries a stream'));
  STREAMING.add(target);
  const bridge = new DemandBridge(target, options);
  bridge.start(flow);
  return bridge;
}

/** Responses a bridge writes to: a second `sendFlow` on one is refused, never interleaved. */
const STREAMING = new WeakSet<ServerResponse>();

/** What a refused stream's handle reports: finished, nothing requested, held or written (its budget is 1 byte). */
const REFUSED_STATE: Readonly<BridgeState> = {
  finished: true,
  upstreamDone: true,
  socketFull: false,
  outstanding: 0,
  heldElements: 0,
  heldBytes: 0,
  batchBytes: 0,
  writableLength: 0,
  budgetUsed: 0,
  budgetMax: 1,
  events: 0,
  bytes: 0,
  idleMs: 0,
};

/** The handle of a stream that never started: `done` reports `error`, nothing was subscribed or written. */
function refused(error: Error): StreamHandle {
  const result: StreamResult = { outcome: 'error', error, events: 0, bytes: 0, durationMs: 0, peakBufferedBytes: 0 };
  return { done: Promise.resolve(result), budget: new ByteBudget(1), end: () => undefined, flush: () => undefined, state: () => ({ ...REFUSED_STATE }) };
}
