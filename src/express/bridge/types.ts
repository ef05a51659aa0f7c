import type { ByteBudget } from '../../flow/budget';
import type { ServerResponse } from 'node:http';
import type { SseEventInit, SseFrame } from '../../sse';
import type { AbortSignalLike } from '../../http/abort-signal-like';

/** How a stream ended; reported to {@link SendFlowOptions.onFinish} and logged by the gateway. */
export type StreamOutcome =
  | 'completed'
  | 'error'
  | 'overflow'
  | 'stalled'
  | 'client_closed'
  | 'aborted';

/** What one stream did, in bytes and ms. */
export interface StreamResult {
  outcome: StreamOutcome;
  /** The error that ended the stream, if any. */
  error?: unknown;
  /** Elements written: events, or {@link SseFrame}s in the byte relay (heartbeats not counted). */
  events: number;
  /** Body bytes handed to `res.write()` (heartbeats included). */
  bytes: number;
  /** ms from subscription to the first element, if one arrived. */
  ttftMs?: number | undefined;
  /** ms from subscription to the end. */
  durationMs: number;
  /** Most bytes this stream held at once: chain buffers + unsent bridge bytes + `res.writableLength`. */
  peakBufferedBytes: number;
}

/**
 * An element the bridge writes: an event to encode, bytes already encoded as SSE (whole events),
 * or an {@link SseFrame} of the byte relay (written as its bytes, counted as one element).
 */
export type BridgeElement = SseEventInit | Uint8Array | SseFrame;

/** Options of {@link sendFlow} and the `sse()` middleware. Units in the names. */
export interface SendFlowOptions {
  /** Events requested per batch (default 16). Replenished when half were written (Reactor `limitRate` 50%). */
  prefetch?: number | undefined;
  /**
   * The per-stream byte budget (default 262144 = 256 KiB): bytes held by the chain's buffering
   * operators (those given the same {@link ByteBudget}) plus bytes the bridge holds, plus
   * `res.writableLength`. An element that would exceed it ends the stream with
   * `ERR_TIDEGATE_OVERFLOW`. Must exceed the socket's `writableHighWaterMark` (16 KiB) plus a
   * batch of events.
   */
  maxBufferedBytes?: number | undefined;
  /** A budget shared with the chain's operators; built from `maxBufferedBytes` when absent. */
  budget?: ByteBudget | undefined;
  /**
   * The largest element the flow emits, bytes, when known (the byte relay's frames). Demand is
   * then counted in bytes as well: an element is requested only while the budget has room for it
   * and for every element already requested, so no `pause` stream overflows its budget on
   * elements of at most this size (each counted with 12 bytes of HTTP chunk framing). The budget
   * must exceed `reserveBytes()` + `writableHighWaterMark` + about 1 KiB by at least this much;
   * otherwise the bridge requests one element at a time, which then may overflow. An element
   * larger than this ends the stream with `SseLimitError('event', maxElementBytes)`.
   */
  maxElementBytes?: number | undefined;
  /**
   * With `maxElementBytes`: bytes the budget must keep free for holders that grow without being
   * requested (e.g. the upstream reader filling up to its high-water mark).
   */
  reserveBytes?: (() => number) | undefined;
  /**
   * Most bytes the kernel keeps unsent for the client's socket (`TCP_NOTSENT_LOWAT`), set when
   * the response starts. Default: 16384, capped at a quarter of the budget; 0 leaves the kernel's
   * default (the whole autotuned send buffer, MBs on Linux, before `res.write()` returns `false`).
   * Needs the socket options addon; without it the kernel's default holds (a process warning
   * says so once).
   */
  kernelUnsentBytes?: number | undefined;
  /** End a stream whose socket accepted nothing for this long (default 30000 ms, like nginx `send_timeout`; 0 disables). */
  stallTimeoutMs?: number | undefined;
  /** Write `: ping` after this much silence (default 15000 ms; 0 disables). */
  heartbeatMs?: number | undefined;
  /** Send a `retry:` reconnection hint (ms) at the start. */
  retryMs?: number | undefined;
  /** Extra response headers. */
  headers?: Record<string, string> | undefined;
  /** Written after the flow completes, before the response ends (e.g. OpenAI's `data: [DONE]`). */
  terminalEvent?: BridgeElement | undefined;
  /** Writes an error after headers were sent; default `event: error` with `{"code","message"}`. */
  formatError?: ((error: unknown) => BridgeElement) | undefined;
  /** Writes an error before headers were sent; default: status from `error.status` or 500, JSON `{error:{code,message}}`. */
  sendHttpError?: ((res: ServerResponse, error: unknown) => void) | undefined;
  /** Aborting it ends the stream with the signal's reason (e.g. a shutdown deadline). An `AbortSignal`, or anything with its `aborted`, `reason` and `'abort'` listeners. */
  signal?: AbortSignalLike | undefined;
  /** Called once with what the stream did. */
  onFinish?: ((result: StreamResult) => void) | undefined;
  /** Called when the first element arrives (time to first token). */
  onFirstElement?: (() => void) | undefined;
  /**
   * Called whenever the bridge may take more: after each element, each flush and on `'drain'`,
   * before it requests. The byte relay resumes an upstream read it held for want of room here.
   */
  onWritable?: (() => void) | undefined;
}

/** The running stream returned by {@link sendFlow}. */
export interface StreamHandle {
  /** Resolves when the stream ended, however it ended. */
  readonly done: Promise<StreamResult>;
  /** The stream's byte budget. */
  readonly budget: ByteBudget;
  /** Ends the stream now: `event: error` with `error` if given, else a clean end. */
  end(error?: unknown): void;
  /**
   * Writes what the bridge batched for the end of the tick now, and hands it to the kernel at once
   * (uncorks the socket Node corked for the tick), e.g. at the end of an upstream read's
   * synchronous delivery: a fast reader then frees the stream's budget before the next read is sized.
   */
  flush(): void;
  /** What the bridge holds and waits for now (for introspection, e.g. the gateway's `/debug/streams`). */
  state(): BridgeState;
}

/**
 * A snapshot of one bridge's demand and buffers (see {@link StreamHandle.state}). Bytes are
 * encoded bytes; `outstanding` and `heldElements` count elements.
 */
export interface BridgeState {
  /** Ended (its outcome is decided; `done` resolves). */
  finished: boolean;
  /** The flow completed or failed, or was cancelled: nothing more will be requested. */
  upstreamDone: boolean;
  /** The last `res.write()` returned `false` and no `'drain'` came yet: nothing is requested. */
  socketFull: boolean;
  /** Elements requested and not yet received. */
  outstanding: number;
  /** Elements received while the socket was full, waiting for `'drain'`. */
  heldElements: number;
  /** Bytes of those elements. */
  heldBytes: number;
  /** Bytes waiting for the end-of-tick flush. */
  batchBytes: number;
  /** `res.writableLength`: bytes Node holds for the socket (HTTP chunk framing included). */
  writableLength: number;
  /** The stream's budget in use now (every owner counted), and its size, bytes. */
  budgetUsed: number;
  budgetMax: number;
  /** Elements and body bytes written so far (heartbeats in `bytes`). */
  events: number;
  bytes: number;
  /** ms since the last write (element or heartbeat). */
  idleMs: number;
  /**
   * The kernel's send queue of the client socket (sent and unacknowledged, plus unsent) and its
   * unsent part, bytes; absent where they cannot be read (no socket options addon, no socket).
   */
  kernel?: { sendQueue: number; unsent: number } | undefined;
}
