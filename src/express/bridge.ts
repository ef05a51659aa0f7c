import type { Response } from 'express';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BufferOverflowError, SseLimitError, StalledError, TidegateError } from '../errors';
import { ByteBudget } from '../flow/budget';
import type { Flow } from '../flow/flow';
import { ArrayQueue } from '../flow/queue';
import type { Subscriber, Subscription } from '../flow/types';
import { encodeSse, SseFrame, type SseEventInit } from '../sse';
import { kernelSendQueueBytes } from './tcp-send-queue';

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
  /** Aborting it ends the stream with the signal's reason (e.g. a shutdown deadline). */
  signal?: AbortSignal | undefined;
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
}

const DEFAULT_PREFETCH = 16;
const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;
const DEFAULT_STALL_TIMEOUT_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 15_000;
const PING = Buffer.from(': ping\n\n');
/** Stop requesting while this many bytes wait for the end-of-tick flush (Node's default socket highWaterMark). */
const BATCH_HIGH_WATER_BYTES = 16 * 1024;
/** Bytes an HTTP/1.1 chunk adds around its data at most: hex size (≤ 8 digits) + CRLF, CRLF. */
const CHUNK_FRAMING_BYTES = 12;
/** Batches whose chunks average fewer bytes are copied into one chunk; larger ones are written corked. */
const COPY_BELOW_BYTES = 1024;

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

class DemandBridge implements Subscriber<BridgeElement>, StreamHandle {
  readonly done: Promise<StreamResult>;
  readonly budget: ByteBudget;
  private resolveDone!: (r: StreamResult) => void;
  private upstream: Subscription | undefined;
  private upstreamDone = false;
  private finished = false;
  private readonly prefetch: number;
  private readonly lowTide: number;

  private outstanding = 0;
  /** Elements that arrived while the socket was full: at most one requested batch. */
  private readonly held = new ArrayQueue<Chunk>();
  private heldBytes = 0;
  /**
   * Chunks written this tick, sent as one `res.write()` at the end of the tick; `undefined` when
   * empty, not a fresh array that a slow stream would keep until its next element (and the GC
   * would promote).
   */
  private batch: Chunk[] | undefined;
  private batchBytes = 0;
  private flushScheduled = false;
  private socketFull = false;
  private events = 0;
  private bytes = 0;
  private readonly startedAt = performance.now();
  private ttftMs: number | undefined;
  private lastWriteAt = Date.now();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  private stallUnsent = 0;
  private stallKernel: number | undefined;
  private lastProgressAt = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SendFlowOptions,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.prefetch = Math.max(1, options.prefetch ?? DEFAULT_PREFETCH);
    this.lowTide = Math.max(1, this.prefetch >> 1);

    this.budget = options.budget ?? new ByteBudget(options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
    this.budget.attachExternal(() => this.heldBytes + this.batchBytes + res.writableLength);
  }

  start(flow: Flow<BridgeElement>): void {
    const { res, options } = this;
    res.on('close', this.onClose);
    res.on('drain', this.onDrain);
    res.on('error', this.onResError);
    options.signal?.addEventListener('abort', this.onAbort);
    if (options.signal?.aborted) return this.onAbort();
    try {
      flow.subscribeWith(this);
    } catch (err) {
      return this.finish('error', err);
    }
    if (this.finished) return;
    this.commit();
    const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    if (heartbeatMs > 0) this.armHeartbeat(heartbeatMs);
    this.request();
  }

  // ---- Subscriber side -------------------------------------------------------------------

  onSubscribe(s: Subscription): void {
    this.upstream = s;
  }

  onNext(element: BridgeElement): void {
    if (this.finished) return;
    this.outstanding--;
    if (this.ttftMs === undefined) {
      this.ttftMs = performance.now() - this.startedAt;
      this.options.onFirstElement?.();
    }
    let chunk: Chunk;
    try {
      chunk = toChunk(element);
    } catch (err) {
      // encodeSse refuses an id/event with CR or LF (injection): this stream ends, nothing else.
      return this.finish('error', err);
    }
    const size = chunkSize(chunk);
    // An element over the declared largest size would void the demand in bytes: refused as an
    // oversized event, like the parser's limits, not counted as an overflow of the budget.
    if (this.options.maxElementBytes !== undefined && size > this.options.maxElementBytes) {
      return this.finish('error', new SseLimitError('event', this.options.maxElementBytes));
    }
    // Count the element before holding it: one large element can never overshoot the budget
    // (with demand in bytes, nor the reserve kept for what the upstream side may still read).
    const reserve = this.options.maxElementBytes === undefined ? 0 : (this.options.reserveBytes?.() ?? 0);
    if (size > this.budget.room(reserve)) {
      return this.finish('overflow', new BufferOverflowError(`stream byte budget of ${this.budget.maxBytes} bytes exceeded by an element of ${size} bytes`));
    }
    this.events++;
    if (this.socketFull) {
      this.held.push(chunk);
      this.heldBytes += size;
      this.budget.observe();
      return;
    }
    this.write(chunk, size);
    this.request();
  }

  onError(error: unknown): void {
    this.upstreamDone = true;
    if (this.finished) return;
    // An upstream aborted because the client left is the client's doing, not an error.
    if (this.res.destroyed) return this.finish('client_closed');
    this.finish(error instanceof TidegateError && error.code === 'ERR_TIDEGATE_OVERFLOW' ? 'overflow' : 'error', error);
  }

  onComplete(): void {
    this.upstreamDone = true;
    if (this.finished) return;
    this.finish('completed');
  }

  // ---- StreamHandle -------------------------------------------------------------------

  end(error?: unknown): void {
    if (error === undefined) this.finish('completed');
    else this.finish('aborted', error);
  }

  flush(): void {
    if (this.finished || this.batch === undefined) return;
    this.flushBatch();
    const socket = this.res.socket;
    if (socket !== null) while (socket.writableCorked > 0) socket.uncork();
  }

  state(): BridgeState {
    return {
      finished: this.finished,
      upstreamDone: this.upstreamDone,
      socketFull: this.socketFull,
      outstanding: this.outstanding,
      heldElements: this.held.length,
      heldBytes: this.heldBytes,
      batchBytes: this.batchBytes,
      writableLength: this.res.writableLength,
      budgetUsed: this.budget.used,
      budgetMax: this.budget.maxBytes,
      events: this.events,
      bytes: this.bytes,
      idleMs: Date.now() - this.lastWriteAt,
    };
  }

  // ---- socket side --------------------------------------------------------------------

  private readonly onDrain = (): void => {
    if (this.finished) return;
    this.socketFull = false;
    this.clearStall();
    while (this.held.length > 0) {
      const chunk = this.held.shift() as Chunk;
      const size = chunkSize(chunk);
      this.heldBytes -= size;
      this.write(chunk, size);
    }
    this.flushBatch();
  };

  private readonly onClose = (): void => {
    if (!this.finished) this.finish('client_closed');
  };

  private readonly onResError = (err: unknown): void => {
    if (!this.finished) this.finish('client_closed', err);
  };

  private readonly onAbort = (): void => {
    if (!this.finished) this.finish('aborted', this.options.signal?.reason);
  };

  private readonly onHeartbeat = (): void => {
    this.heartbeatTimer = undefined;
    if (this.finished) return;
    const heartbeatMs = this.options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    const idleMs = Date.now() - this.lastWriteAt;
    if (idleMs >= heartbeatMs && !this.socketFull) this.write(PING, PING.length);
    this.armHeartbeat(Math.max(1, heartbeatMs - (Date.now() - this.lastWriteAt)));
  };

  private readonly onStallCheck = (): void => {
    this.stallTimer = undefined;
    if (this.finished || !this.socketFull) return;
    const stallMs = this.options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    const now = Date.now();
    if (this.sampleProgress()) this.lastProgressAt = now;
    if (now - this.lastProgressAt >= stallMs) {
      this.finish('stalled', new StalledError(stallMs));
      return;
    }
    this.stallTimer = setTimeout(this.onStallCheck, Math.min(stallMs - (now - this.lastProgressAt), this.stallTickMs(stallMs)));
  };

  /**
   * True when the reader made progress since the last sample: Node's unsent bytes shrank, or
   * the kernel's send queue moved at all (an ACK freed space, and libuv refilled it). A stalled
   * reader advertises a zero window, so neither moves.
   */
  private sampleProgress(): boolean {
    const socket = this.res.socket;
    const unsent = this.res.writableLength;
    const shrank = unsent < this.stallUnsent;
    this.stallUnsent = unsent;
    // Reading the kernel's queue parses /proc/net/tcp: only when Node's own count shows nothing.
    // One table read serves every stream for half a stall tick (a read costs ~10 ms of kernel
    // time), so each check still sees a table read after the previous check.
    const kernel = shrank || !socket ? undefined : kernelSendQueueBytes(socket, this.stallTickMs(this.options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS) / 2);
    const moved = shrank || (kernel !== undefined && this.stallKernel !== undefined && kernel !== this.stallKernel);
    this.stallKernel = kernel;
    return moved;
  }

  private stallTickMs(stallMs: number): number {
    return Math.max(10, Math.min(1000, Math.floor(stallMs / 5)));
  }

  /** Sends the headers, and queues the retry hint first in the batch; `start()` arms the heartbeat (a stream that already finished gets none). */
  private commit(): void {
    const { res, options } = this;
    if (res.headersSent) return;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    // Only where the client keeps the connection: a request with `Connection: close` must be honoured.
    if (res.req?.httpVersionMajor === 1 && res.shouldKeepAlive) res.setHeader('Connection', 'keep-alive');
    for (const [name, value] of Object.entries(options.headers ?? {})) res.setHeader(name, value);
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    if (options.retryMs !== undefined) {
      const hint = toChunk({ retry: options.retryMs });
      this.write(hint, hint.length);
    }
  }

  private request(): void {
    if (this.finished || this.socketFull || this.upstream === undefined || this.upstreamDone) return;
    this.options.onWritable?.();
    if (this.finished) return;
    const elementBytes = this.options.maxElementBytes;
    if (elementBytes === undefined) {
      if (this.batchBytes >= BATCH_HIGH_WATER_BYTES) return; // the end-of-tick flush asks again
      if (this.outstanding > this.prefetch - this.lowTide) return;
      const n = this.prefetch - this.outstanding;
      this.outstanding += n;
      this.upstream.request(n);
      return;
    }
    // Demand in bytes: room for every requested element at its largest size. Liveness: with the
    // socket not full and nothing requested, room ≥ budget − reserve − writableHighWaterMark.
    const free = this.budget.room(this.options.reserveBytes?.() ?? 0);
    // Each element written costs its HTTP/1.1 chunk framing in res.writableLength too.
    let n = Math.min(this.prefetch, Math.floor(free / (elementBytes + CHUNK_FRAMING_BYTES))) - this.outstanding;
    if (n <= 0) {
      // Asked again after the flush, on 'drain', or when an element arrives. With nothing in
      // flight nothing would ask again: one element then, which fits or overflows (an oversized
      // event ends the stream with ERR_TIDEGATE_OVERFLOW instead of hanging it).
      if (this.outstanding > 0 || this.batch !== undefined || this.held.length > 0) return;
      n = 1;
    }
    this.outstanding += n;
    this.upstream.request(n);
  }

  /**
   * Queues a chunk for the end-of-tick flush: everything ready in one tick leaves in a single
   * `res.write()` (one HTTP chunk, one syscall), instead of one per token.
   */
  private write(chunk: Chunk, size: number): void {
    (this.batch ??= []).push(chunk);
    this.batchBytes += size;
    this.bytes += size;
    this.lastWriteAt = Date.now();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(this.flushBatch);
    }
  }

  /** Removes and returns the batch as one string or Buffer (`undefined` when empty). */
  private takeBatch(): Chunk | undefined {
    const { batch } = this;
    if (batch === undefined) return undefined;
    const out = batch.length === 1 ? batch[0] : Buffer.concat(batch, this.batchBytes);
    this.batch = undefined;
    this.batchBytes = 0;
    return out;
  }

  private readonly flushBatch = (): void => {
    this.flushScheduled = false;
    if (this.finished) return;
    const { batch } = this;
    if (batch === undefined) return this.request();
    let written: boolean;
    if (batch.length > 1 && this.batchBytes >= batch.length * COPY_BELOW_BYTES) {
      // Large chunks (byte relay frames): one writev of them all, without copying them together.
      this.batch = undefined;
      this.batchBytes = 0;
      this.res.cork();
      written = true;
      for (let i = 0; i < batch.length; i++) written = this.res.write(batch[i], i === batch.length - 1 ? this.afterWrite : undefined) && written;
      this.res.uncork();
    } else written = this.res.write(this.takeBatch() as Chunk, this.afterWrite);
    if (!written) {
      this.socketFull = true;
      this.armStall();
    }
    this.budget.observe();
    this.request();
  };

  /**
   * A flushed batch reached the kernel: its bytes left `res.writableLength` (and the budget)
   * without a `'drain'` when `write()` had returned true; whoever waits for room hears it.
   */
  private readonly afterWrite = (): void => {
    if (!this.finished && !this.socketFull) this.options.onWritable?.();
  };

  private armHeartbeat(ms: number): void {
    this.heartbeatTimer = setTimeout(this.onHeartbeat, ms);
  }

  /**
   * Starts watching a full socket. Progress is any byte the kernel accepts (a shrinking unsent
   * count), not only `'drain'`: a reader taking 1 KiB/s may need many seconds per `'drain'`.
   */
  private armStall(): void {
    const stallMs = this.options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (stallMs <= 0 || this.stallTimer !== undefined) return;
    // The kernel's queue is first sampled at the first check: most full sockets drain before it.
    this.stallUnsent = this.res.writableLength;
    this.stallKernel = undefined;
    this.lastProgressAt = Date.now();
    this.stallTimer = setTimeout(this.onStallCheck, this.stallTickMs(stallMs));
  }

  private clearStall(): void {
    if (this.stallTimer !== undefined) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  private finish(outcome: StreamOutcome, error?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    const { res, options } = this;
    if (!this.upstreamDone) {
      this.upstreamDone = true;
      this.upstream?.cancel();
    }
    this.clearStall();
    if (this.heartbeatTimer !== undefined) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
    res.off('drain', this.onDrain);
    res.off('close', this.onClose);
    options.signal?.removeEventListener('abort', this.onAbort);
    // Elements held for a full socket and what was written this tick still go out before a clean
    // or error end (at most one requested batch, already counted); not to a gone peer.
    const peerGone = outcome === 'client_closed' || outcome === 'stalled';
    // A flow that completes as it is subscribed ends before start() commits: the headers and the
    // retry hint go now, ahead of the batch taken below.
    if (outcome === 'completed' && !res.headersSent) this.commit();
    if (!peerGone) for (const chunk of this.held) this.write(chunk, chunk.length);
    this.held.clear();
    this.heldBytes = 0;
    const pending = peerGone ? undefined : this.takeBatch();
    this.batch = undefined;
    this.batchBytes = 0;

    if (outcome === 'client_closed') {
      res.off('error', this.onResError);
    } else if (outcome === 'stalled') {
      // The error event goes behind what the socket still holds, and the connection is not
      // reused. The response is ended only once the reader has taken everything (a reader that
      // comes back learns why); one that takes nothing for another stallTimeoutMs is reset (RST).
      // Not ended at once: Node would close the descriptor as soon as its own buffer reached the
      // kernel, and the orphaned socket would then hold the kernel's queue in FIN-WAIT-1 for
      // minutes, out of reach of a reset. (The 'error' listener stays: a reset must not crash.)
      res.shouldKeepAlive = false;
      const tail = toChunk((options.formatError ?? formatError)(error));
      this.bytes += tail.length;
      if (!res.writableEnded && !res.destroyed) res.write(tail);
      if (res.socket !== null) this.lingerUntilDelivered(res.socket, true, () => res.end());
    } else if (!res.headersSent) {
      res.off('error', this.onResError);
      (options.sendHttpError ?? sendHttpError)(res, error);
    } else {
      // Keep an 'error' listener: a peer reset during the last write must not crash the process.
      const tail = outcome === 'completed' ? options.terminalEvent : (options.formatError ?? formatError)(error);
      this.endWith(pending, tail);
      // The end waits behind bytes Node could not hand to the kernel (a reader that stopped just
      // as the stream ended, e.g. by overflow or a total timeout): without a watch the connection
      // would stay open with them for as long as the peer keeps it. Bounded like a stall cut;
      // once Node has handed the end to the kernel, its keep-alive handling takes the socket over.
      if (res.socket !== null && !res.destroyed && res.writableLength > 0) this.lingerUntilDelivered(res.socket, false, undefined);
    }
    const result: StreamResult = {
      outcome,
      error,
      events: this.events,
      bytes: this.bytes,
      ttftMs: this.ttftMs,
      durationMs: performance.now() - this.startedAt,
      peakBufferedBytes: this.budget.peak,
    };
    this.resolveDone(result);
    options.onFinish?.(result);
  }

  /**
   * After the stream ended with bytes still queued for the peer (a stall cut, or an end behind a
   * full socket): calls `onDelivered` once the peer has taken the queued bytes (Node's, and with
   * `kernelToo` the kernel's send queue as well), or resets the socket once it has made no
   * progress for `stallTimeoutMs`, so a peer that never reads again never holds the connection
   * and its queues for longer. Nothing is watched when `stallTimeoutMs` is 0.
   */
  private lingerUntilDelivered(socket: Socket, kernelToo: boolean, onDelivered: (() => void) | undefined): void {
    const { res } = this;
    const stallMs = this.options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (stallMs <= 0) return; // stall handling off (a stall cut never happens then): Node's own timeouts only
    const tickMs = this.stallTickMs(stallMs);
    this.stallUnsent = res.writableLength;
    this.stallKernel = undefined;
    let progressAt = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      timer = undefined;
      if (socket.destroyed) return;
      if (res.writableLength === 0 && (!kernelToo || (kernelSendQueueBytes(socket, tickMs / 2) ?? 0) === 0)) {
        onDelivered?.(); // all delivered (after a stall cut: a graceful end, the connection then closes)
        return;
      }
      if (this.sampleProgress()) progressAt = Date.now();
      if (Date.now() - progressAt >= stallMs) {
        if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
        else socket.destroy();
        return;
      }
      timer = setTimeout(check, tickMs);
    };
    timer = setTimeout(check, tickMs);
    socket.once('close', () => {
      if (timer !== undefined) clearTimeout(timer);
    });
  }

  private endWith(pending: Chunk | undefined, tail: BridgeElement | undefined): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    const last = tail === undefined ? undefined : toChunk(tail);
    if (last !== undefined) this.bytes += chunkSize(last);
    if (pending !== undefined && last !== undefined) this.res.end(Buffer.concat([pending, last]));
    else if (pending !== undefined || last !== undefined) this.res.end((pending ?? last) as Chunk);
    else this.res.end();
  }
}

/**
 * Encoded SSE bytes. Strings are encoded to UTF-8 once, here: the size is then exact without a
 * `Buffer.byteLength` pass, and `res.write()` neither measures nor encodes again.
 */
type Chunk = Buffer;

function toChunk(element: BridgeElement): Chunk {
  if (element instanceof SseFrame) return element.bytes;
  if (element instanceof Uint8Array) {
    return Buffer.isBuffer(element) ? element : Buffer.from(element.buffer, element.byteOffset, element.byteLength);
  }
  return Buffer.from(encodeSse(element), 'utf8');
}

function chunkSize(chunk: Chunk): number {
  return chunk.length;
}

/** The JSON body of an error: `{ code, message }`, with `ERR_TIDEGATE_INTERNAL` for foreign errors. */
export function errorBody(error: unknown): { code: string; message: string } {
  if (error instanceof TidegateError) return { code: error.code, message: error.message };
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return { code: typeof code === 'string' ? code : 'ERR_TIDEGATE_INTERNAL', message };
}

/** The default error written after headers: `event: error` with `data: {"code","message"}`. */
export function formatError(error: unknown): SseEventInit {
  return { event: 'error', data: JSON.stringify(errorBody(error)) };
}

/** The default error before headers: status from `error.status` (or 500) and `{error:{code,message}}`. */
export function sendHttpError(res: ServerResponse, error: unknown): void {
  const status = (error as { status?: unknown } | undefined)?.status;
  res.statusCode = typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ error: errorBody(error) }));
}
