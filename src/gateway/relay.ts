import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { BufferOverflowError, ShutdownError, SseLimitError, TidegateError, TimeoutError } from '../errors';
import { sendFlow, type BridgeElement, type StreamHandle, type StreamResult } from '../express/bridge';
import { ByteBudget } from '../flow/budget';
import { addDemand } from '../flow/demand';
import type { Flow } from '../flow/flow';
import { limitRate } from '../flow/operators/limit-rate';
import { map } from '../flow/operators/map';
import { onBackpressureBuffer } from '../flow/operators/on-backpressure-buffer';
import { OperatorSubscriber, operator } from '../flow/operators/operator-subscriber';
import type { FlowContext, Subscriber } from '../flow/types';
import { SseFrame, sseDecode, sseFrames } from '../sse';
import { UpstreamHttpError, UpstreamResetError, UpstreamStreamError, UpstreamTruncatedError } from '../upstream/errors';
import { adaptFrames, adaptProvider } from '../upstream/providers/adapt';
import { codeOf } from '../upstream/providers/errors-http';
import type { GatewayEvent, ProviderAdapter, TokenUsage } from '../upstream/providers/types';
import { fetchUpstream, openUpstreamStream, UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MAX_READ_BYTES, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES, type UpstreamRequest, type UpstreamStream } from '../upstream/request';
import { upstreamRedaction, type Scrubber, type UpstreamRedaction } from '../upstream/redact';
import { openResumableStream } from '../upstream/resumable';
import { scrubbingAdapter, scrubEvents } from '../upstream/providers/scrub';
import { withRetries } from '../upstream/retry';
import { watchAbort } from './abort-watch';
import type { ResolvedRoute } from './config';
import type { Logger } from './logger';
import type { GatewayMetrics } from './metrics';

/** How a relayed request ended, as logged (`outcome`) and counted (`tidegate_streams_total`). */
export type RelayOutcome =
  | 'completed'
  | 'upstream_reset'
  | 'overflow'
  | 'stalled'
  | 'client_closed'
  | 'timeout'
  | 'upstream_error'
  | 'shutdown';

/** What a user-written policy receives besides the events. */
export interface PolicyContext {
  readonly streamId: string;
  readonly route: ResolvedRoute;
  /** The stream's byte budget, shared with the bridge: give it to `onBackpressureBuffer({ budget })`. */
  readonly budget: ByteBudget;
  readonly req: Request;
}

/**
 * A user-written operator chain for one route, applied to the decoded events after the
 * configured `limitRate` and before the configured overflow buffer. It must keep each event's
 * `wire` valid for the provider's protocol (filter, delay, annotate; never rewrite `wire.data`
 * into another format).
 */
export type StreamPolicyFn = (events: Flow<GatewayEvent>, context: PolicyContext) => Flow<GatewayEvent>;

/** Per-route collaborators of {@link relay}. */
export interface RelayOptions {
  route: ResolvedRoute & { url: string };
  adapter: ProviderAdapter;
  logger: Logger;
  metrics: GatewayMetrics;
  policy?: StreamPolicyFn | undefined;
  /** Aborted (with a ShutdownError) when the shutdown grace period is over. */
  shutdown: AbortSignal;
  /** Called with the stream's abort function while it runs; the return value unregisters it. */
  register(abort: (reason: unknown) => void): () => void;
}

/** A client left; the reason the upstream request is aborted with. */
class ClientClosedError extends TidegateError {
  constructor() {
    super('ERR_TIDEGATE_CLIENT_CLOSED', 'client closed the connection');
  }
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) and ones the gateway sets itself: never forwarded. */
const NEVER_FORWARD = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'accept-encoding']);

/**
 * Relays one client request to the route's upstream and back: retries while nothing reached the
 * client, commits headers only on a streaming 200, decodes with the provider adapter, applies
 * the route's policies, writes through the demand bridge, and logs one line per stream.
 */
export async function relay(req: Request, res: Response, options: RelayOptions): Promise<void> {
  const { route, logger, metrics } = options;
  let adapter = options.adapter;
  let redaction: UpstreamRedaction | undefined;
  const streamId = randomUUID();
  const arrivedAt = performance.now();
  const elapsed = (): number => round(performance.now() - arrivedAt);
  // One controller for everything that ends a stream from the gateway's side (total timeout,
  // shutdown) and for a client that leaves before the headers: the upstream call and the bridge
  // both watch it (an AbortSignal with its listener is about 1 KB of heap per stream).
  const upstreamAbort = new AbortController();
  const abortAll = (reason: unknown): void => {
    if (!upstreamAbort.signal.aborted) upstreamAbort.abort(reason);
  };
  const onShutdown = (): void => abortAll(options.shutdown.reason ?? new ShutdownError());
  if (options.shutdown.aborted) onShutdown();
  // Not addEventListener: the shutdown signal is shared by every stream (see abort-watch.ts).
  const unwatchShutdown = watchAbort(options.shutdown, onShutdown);
  const unregister = options.register(abortAll);
  const totalMs = route.timeouts.totalMs;
  const totalTimer = totalMs > 0 ? setTimeout(() => abortAll(new TimeoutError('total', totalMs, `stream exceeded its total time of ${totalMs} ms`)), totalMs) : undefined;
  const onClientClose = (): void => {
    if (!res.headersSent && !upstreamAbort.signal.aborted) upstreamAbort.abort(new ClientClosedError());
  };
  res.once('close', onClientClose);
  metrics.activeStreams.inc({ route: route.path });
  let attempts = 0;
  const usage: TokenUsage = {};
  let ttftMs: number | undefined;
  const log = (fields: Record<string, unknown>): void => {
    logger.info('stream', {
      streamId,
      route: route.path,
      provider: route.provider,
      method: req.method,
      attempts,
      ...fields,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
    });
  };
  const finish = (outcome: RelayOutcome, fields: Record<string, unknown>): void => {
    metrics.streams.inc({ route: route.path, outcome });
    metrics.duration.observe({ route: route.path, outcome }, (performance.now() - arrivedAt) / 1000);
    if (outcome === 'overflow') metrics.overflowTerminations.inc({ route: route.path });
    log({ outcome, durationMs: elapsed(), ...fields });
  };

  try {
    const body = req.body as unknown;
    const json = route.provider !== 'passthrough' && isObject(body) ? body : undefined;
    const clientWantsStream = route.provider === 'passthrough' || json?.stream === true;
    const streaming = clientWantsStream && (route.stream || route.provider === 'passthrough');
    let requestBody: string | Buffer | undefined;
    if (json !== undefined) requestBody = JSON.stringify(clientWantsStream && !streaming && adapter.nonStreamBody ? adapter.nonStreamBody(json) : json);
    else if (Buffer.isBuffer(body) && body.length > 0) requestBody = body;
    const upstreamRequest: UpstreamRequest = {
      url: upstreamUrl(route, req),
      method: req.method === 'GET' ? 'GET' : 'POST',
      headers: upstreamHeaders(req, route, adapter),
      body: req.method === 'GET' ? undefined : requestBody,
      signal: upstreamAbort.signal,
      connectTimeoutMs: route.timeouts.connectMs,
      firstByteTimeoutMs: route.timeouts.firstByteMs,
      idleTimeoutMs: route.timeouts.idleMs,
      maxBodyBytes: route.maxBodyBytes,
      route: route.path,
    };
    // Nothing about the upstream reaches the client: its credentials leave every relayed body
    // and frame, its URL every error (the adapter's errors are scrubbed from here on).
    redaction = upstreamRedaction(upstreamRequest.url, route.apiKey, upstreamRequest.headers ?? {});
    adapter = scrubbingAdapter(adapter, redaction.errors);
    const attempt = async <T>(call: () => Promise<T>): Promise<T> => {
      attempts++;
      try {
        const result = await call();
        metrics.upstreamRequests.inc({ route: route.path, outcome: 'ok' });
        return result;
      } catch (err) {
        metrics.upstreamRequests.inc({ route: route.path, outcome: upstreamOutcome(err) });
        throw err;
      }
    };
    const retryOptions = {
      signal: upstreamAbort.signal,
      onRetry: ({ error }: { error: unknown }) => metrics.retries.inc({ route: route.path, reason: upstreamOutcome(error) }),
    };

    if (!streaming) {
      const answer = await withRetries(() => attempt(() => fetchUpstream(upstreamRequest)), route.retry, retryOptions);
      res.status(answer.status);
      if (answer.contentType) res.setHeader('Content-Type', answer.contentType);
      const answerBody = redaction.keys.buffer(answer.body);
      res.end(answerBody);
      metrics.bytesOut.inc({ route: route.path }, answerBody.length);
      finish('completed', { status: answer.status, bytes: answerBody.length, stream: false });
      return;
    }

    const budget = new ByteBudget(route.policy.maxBufferedBytes);
    let frameBytes = byteRelayFrameBytes(route, res, options.policy !== undefined);
    // Byte relay: the peak also counts what the upstream reader takes in while nobody asks.
    if (frameBytes !== undefined) upstreamRequest.onRead = () => void budget.observe();
    let events: Flow<GatewayEvent>;
    /** Byte relay: re-checks an upstream read held for want of room. */
    let gate: ReadGate | undefined;
    /** The upstream call (not on resumable routes, which read through connectSse), for the gauges and `describe()`. */
    let reader: UpstreamStream | undefined;
    let handle: StreamHandle | undefined;
    let readerCounted = false;
    /** Set when a small byte-relay budget meets an unsized reader: the event relay with demand in bytes, events up to this size. */
    let smallEventBytes: number | undefined;
    if (route.resumable && route.provider === 'passthrough') {
      // Resumable routes read the upstream through connectSse: a dropped upstream is reconnected
      // with Last-Event-ID (its own backoff), so these may reconnect after the first byte.
      attempts++;
      const decoded = await openResumableStream({
        url: upstreamRequest.url,
        method: upstreamRequest.method ?? 'GET',
        headers: withoutLastEventId(upstreamRequest.headers ?? {}), // connectSse sends it, updated on each reconnect
        body: upstreamRequest.body,
        signal: upstreamAbort.signal,
        lastEventId: String(req.headers['last-event-id'] ?? ''),
        maxAttempts: route.retry.maxAttempts,
        idleTimeoutMs: route.timeouts.idleMs,
        maxEventBytes: route.policy.maxEventBytes,
        isTerminal: route.terminator ? (e) => (route.terminator?.event ?? e.type) === e.type && (route.terminator?.data ?? e.data) === e.data : undefined,
      }).catch((err: unknown) => {
        metrics.upstreamRequests.inc({ route: route.path, outcome: upstreamOutcome(err) });
        throw err;
      });
      metrics.upstreamRequests.inc({ route: route.path, outcome: 'ok' });
      events = decoded.pipe(adaptProvider(adapter));
    } else {
      // Byte relay: bytes enter the stream only by upstream reads, each sized to the budget's
      // free room (less READ_SLACK_BYTES), so the budget bounds every userland byte whatever
      // the demand downstream; the gate holds a read while there is no room.
      // The read's frames are written first (not at the end of the tick): a fast reader's kernel
      // takes them at once, so they do not count against the next read.
      if (frameBytes !== undefined) {
        upstreamRequest.readBytes = (unreadBytes) => {
          handle?.flush();
          // Until the budget counts the reader (once the call resolved), its bytes are added here.
          return budget.maxBytes - budget.used - (readerCounted ? 0 : unreadBytes) - readReserveBytes(budget, res);
        };
      }
      // Only this call is retried: it ends at the upstream's status line, before the client saw a byte.
      const upstream = await withRetries(() => attempt(() => openUpstreamStream(upstreamRequest)), route.retry, retryOptions);
      reader = upstream;
      // A compressed or TLS body (reads not sized) takes up to UNSIZED_READER_BYTES unasked: with
      // less room than that beside a frame, its bytes could not stay inside the budget, so this
      // stream relays events instead (whose budget leaves the reader out).
      // Its demand is then counted in bytes (events up to what fits beside the socket's buffer),
      // so a paused stream still keeps to the small budget.
      if (frameBytes !== undefined && !upstream.readsSized() && !unsizedReaderFits(route, res)) {
        frameBytes = undefined;
        smallEventBytes = Math.min(route.policy.maxEventBytes, relayRoom(route, res));
      }
      if (frameBytes === undefined) {
        // The event relay's budget covers the chain and the bridge (count-based demand cannot keep
        // room for the upstream reader); its ≤ 20 KiB and the parser's one read come on top.
        const maxEventBytes = smallEventBytes ?? route.policy.maxEventBytes;
        events = upstream.body.pipe(sseDecode({ maxEventBytes, maxLineBytes: maxEventBytes }), adaptProvider(adapter));
      } else {
        // The byte relay's budget counts every userland byte: what was read from the upstream but
        // not decoded yet, the frames waiting in sseFrames, and the bridge.
        budget.attachExternal(upstream.bufferedBytes);
        readerCounted = true;
        const queued = { bytes: 0 };
        budget.attachExternal(() => queued.bytes);
        // An event that could not pass beside the socket's buffer and the reads' slack is refused
        // as it arrives (ERR_TIDEGATE_SSE_LIMIT): the carried block never crowds out the budget.
        const maxEventBytes = Math.min(route.policy.maxEventBytes, relayRoom(route, res));
        events = upstream.body
          .pipe(
            operator<Buffer, Buffer>((actual, context) => (gate = new ReadGate(actual, context, budget, res, upstream, queued))),
            sseFrames({ maxEventBytes, maxFrameBytes: frameBytes, queued }),
            adaptFrames(adapter),
          );
      }
    }
    const flow = buildChain(events, {
      scrubber: redaction.keys,
      route,
      adapter,
      budget,
      policy: options.policy,
      req,
      streamId,
      usage,
      onFirstToken: () => {
        if (ttftMs === undefined) {
          ttftMs = elapsed();
          metrics.ttft.observe({ route: route.path }, ttftMs / 1000);
        }
      },
    });
    const bodyOf = (call: UpstreamStream): Readable => call.response.body as unknown as Readable;
    const untrack = metrics.track({
      bufferedBytes: () => budget.used,
      upstreamPaused: () => {
        const body = reader === undefined ? undefined : bodyOf(reader);
        return body !== undefined && body.isPaused() && body.readableLength > 0 && !body.readableEnded;
      },
      describe: () => ({
        streamId,
        route: route.path,
        ageMs: elapsed(),
        bridge: handle?.state(),
        upstream: reader === undefined ? undefined : { bufferedBytes: reader.bufferedBytes(), readsSized: reader.readsSized(), paused: bodyOf(reader).isPaused(), ended: bodyOf(reader).readableEnded },
        heldReadDemand: gate?.heldDemand,
      }),
    });
    handle = sendFlow(res, flow, {
      prefetch: frameBytes === undefined ? route.policy.prefetch : FRAME_PREFETCH,
      // An event's wire frame is its decoded fields re-encoded: at most its upstream size and a few bytes.
      maxElementBytes: smallEventBytes === undefined ? undefined : smallEventBytes + WIRE_MARGIN_BYTES,
      onWritable: frameBytes === undefined ? undefined : () => gate?.poke(),
      budget,
      stallTimeoutMs: route.policy.stallTimeoutMs,
      heartbeatMs: route.policy.heartbeatMs,
      formatError: (e) => adapter.formatError(e),
      sendHttpError: (r, e) => adapter.sendHttpError(r, e),
      signal: upstreamAbort.signal,
      headers: { 'X-Tidegate-Stream-Id': streamId },
    });
    // The bridge watches the client from here on (its headers are sent): one 'close' listener less per stream.
    res.off('close', onClientClose);
    let result: StreamResult;
    try {
      result = await handle.done;
    } finally {
      untrack();
    }
    metrics.bytesOut.inc({ route: route.path }, result.bytes);
    finish(streamOutcome(result), {
      status: res.statusCode,
      ttftMs,
      events: result.events,
      bytes: result.bytes,
      peakBufferedBytes: result.peakBufferedBytes,
      errorCode: result.error === undefined ? undefined : codeOf(result.error),
      timeoutKind: result.error instanceof TimeoutError ? result.error.kind : undefined,
    });
  } catch (err) {
    // Nothing reached the client yet: an HTTP error in the provider's shape.
    const clientGone = err instanceof ClientClosedError || res.destroyed;
    if (!clientGone && !res.headersSent) {
      if (err instanceof UpstreamHttpError) {
        res.status(err.status);
        res.setHeader('Content-Type', err.contentType ?? 'application/json; charset=utf-8');
        if (err.retryAfterMs !== undefined) res.setHeader('Retry-After', String(Math.ceil(err.retryAfterMs / 1000)));
        res.end(redaction === undefined ? '' : redaction.errors.string(err.body));
      } else adapter.sendHttpError(res, err);
    }
    finish(clientGone ? 'client_closed' : errorOutcome(err), {
      upstream: redaction?.url,
      errorDetail: redaction?.detail(err),
      status: clientGone ? 499 : res.statusCode,
      errorCode: codeOf(err),
      timeoutKind: err instanceof TimeoutError ? err.kind : undefined,
      upstreamStatus: err instanceof UpstreamHttpError ? err.status : undefined,
    });
  } finally {
    if (totalTimer !== undefined) clearTimeout(totalTimer);
    // The stream is over: an upstream body nobody read to its end (a policy that never subscribed
    // to the events, an answer sent before the stream started) is closed with its call's timers.
    if (!upstreamAbort.signal.aborted) upstreamAbort.abort();
    unwatchShutdown();
    res.off('close', onClientClose);
    unregister();
    metrics.activeStreams.dec({ route: route.path });
  }
}

interface ChainOptions {
  /** The upstream credentials, replaced in every event before the client sees it. */
  scrubber: Scrubber;
  route: ResolvedRoute;
  adapter: ProviderAdapter;
  budget: ByteBudget;
  policy: StreamPolicyFn | undefined;
  req: Request;
  streamId: string;
  usage: TokenUsage;
  onFirstToken(): void;
}

/** Frames the bridge may request ahead in the byte relay (the reads' sizes bound the bytes). */
const FRAME_PREFETCH = 16;
/** Largest frame of the byte relay, bytes: one upstream read's complete events. */
const MAX_FRAME_BYTES = UPSTREAM_MAX_READ_BYTES;
/**
 * Budget kept free by the byte relay's read sizes, bytes: a paused `IncomingMessage` goes on
 * reading until it holds its high-water mark, by reads of at least 1 KiB even without room; and
 * `res.writableLength` counts HTTP chunk framing and heartbeats beyond the frames (1 KiB).
 */
const READ_SLACK_BYTES = UPSTREAM_HIGH_WATER_MARK + UPSTREAM_MIN_READ_BYTES + 1024;

/**
 * Budget the read sizes and the read gate keep free, bytes: {@link READ_SLACK_BYTES}, plus an
 * eighth of the budget (8 KiB of 64 KiB) while the client's socket holds unsent bytes (a reader
 * not keeping up). The margin was added against the S1 benchmark's outside estimate, later found
 * to overstate every proxy by 7–15 KiB (docs/decisions.md); it stays as headroom, costing a
 * lagging stream smaller reads and a reader that keeps up (nothing unsent after the flush)
 * nothing. Event sizes and the byte relay's threshold use the slack only.
 */
function readReserveBytes(budget: ByteBudget, res: Response): number {
  return READ_SLACK_BYTES + (res.writableLength > 0 ? budget.maxBytes >> 3 : 0);
}
/** What an upstream reader whose reads are not sized may take unasked: its high-water mark, one 16 KiB read, one 16 KiB zlib chunk. */
const UNSIZED_READER_BYTES = UPSTREAM_HIGH_WATER_MARK + 2 * UPSTREAM_READ_BYTES;
/** What re-encoding may add to an event's upstream bytes (a `data: ` prefix on an empty line, a final LF), bytes. */
const WIRE_MARGIN_BYTES = 64;
/** Below this room beside the socket's buffer and the slack, the byte relay gains little: events are relayed one by one. */
const MIN_RELAY_ROOM_BYTES = 8 * 1024;

/**
 * The frame size of the byte relay for this stream, bytes, or `undefined` to relay events
 * (`relay: events`, a `limitRate`, a user policy or a resumable route: they count or see events;
 * or a budget under the socket's high-water mark + {@link READ_SLACK_BYTES} + 8 KiB, about 30 KiB).
 * A compressed or TLS upstream (reads not sized) needs about 36 KiB more for what its reader
 * takes unasked: below about 66 KiB such a stream relays events (decided at the response).
 * The byte relay's upstream reads are sized to the budget's free room (see {@link ReadGate}), so
 * `pause` never overflows the budget, which counts every userland byte of the stream.
 */
function byteRelayFrameBytes(route: ResolvedRoute, res: Response, hasPolicy: boolean): number | undefined {
  if (route.policy.relay !== 'bytes' || hasPolicy || route.policy.limitRate > 0 || route.resumable) return undefined;
  return relayRoom(route, res) >= MIN_RELAY_ROOM_BYTES ? MAX_FRAME_BYTES : undefined;
}

/**
 * The budget's room beside the client socket's buffer and {@link READ_SLACK_BYTES}, bytes: the
 * largest event a stream relays (a bigger one is refused as it arrives) and what decides its relay.
 */
function relayRoom(route: ResolvedRoute, res: Response): number {
  return route.policy.maxBufferedBytes - res.writableHighWaterMark - READ_SLACK_BYTES;
}

/** True when the byte relay's budget has room for an unsized reader (compressed or TLS body) beside a frame. */
function unsizedReaderFits(route: ResolvedRoute, res: Response): boolean {
  return relayRoom(route, res) >= UNSIZED_READER_BYTES + MIN_RELAY_ROOM_BYTES;
}

/**
 * The byte relay's admission of upstream bytes: passes a request for the next upstream read only
 * while the stream's budget has room for one (its size then follows that room, see
 * `UpstreamRequest.readBytes`), and holds it otherwise until {@link poke} finds room (the bridge
 * calls it as it writes). Without room and with nothing on its way out, the reader's unread
 * bytes are still delivered (their frames then leave); with none of those either, the stream
 * ends with {@link BufferOverflowError} (the incomplete event's cap makes this unreachable).
 */
class ReadGate extends OperatorSubscriber<Buffer, Buffer> {
  private held = 0;

  constructor(
    actual: Subscriber<Buffer>,
    context: FlowContext,
    private readonly budget: ByteBudget,
    private readonly res: Response,
    private readonly reader: UpstreamStream,
    /** The bytes `sseFrames` holds (its queue, empty when it asks, and the incomplete event). */
    private readonly queued: { bytes: number },
  ) {
    super(actual, context);
  }

  /** Requests held for want of room (0 when none wait). */
  get heldDemand(): number {
    return this.held;
  }

  onNext(value: Buffer): void {
    this.actual.onNext(value);
  }

  override request(n: number): void {
    this.held = addDemand(this.held, n);
    this.poke();
  }

  /** Passes the held request upstream if the budget has room for a read now, or if the reader holds bytes nothing else will move. */
  poke(): void {
    if (this.held === 0 || this.done || this.cancelled) return;
    const { budget, reader } = this;
    const readerBytes = reader.bufferedBytes();
    let room = budget.maxBytes - budget.used - readReserveBytes(budget, this.res);
    // Reads not sized to the room (zlib inflating, TLS): keep what the reader may still take unasked free.
    const sized = reader.readsSized();
    if (!sized) room -= Math.max(0, UNSIZED_READER_BYTES - readerBytes - this.queued.bytes);
    if (room < UPSTREAM_MIN_READ_BYTES) {
      // The bridge's bytes leave without a read: wait for them (the bridge pokes as it writes).
      if (budget.used - readerBytes - this.queued.bytes > 0) return;
      // Nothing leaves: the reader's bytes go on (their frames then leave), or it is stuck.
      if (sized && readerBytes === 0) {
        this.fail(new BufferOverflowError(`stream byte budget of ${budget.maxBytes} bytes has no room for the rest of an event`));
        return;
      }
    }
    const n = this.held;
    this.held = 0;
    this.upstream.request(n);
  }
}

/**
 * (bytes → `sseDecode` → adapter, `sseFrames` → `adaptFrames`, or connectSse → adapter) → usage/ttft
 * tap → credential scrub → `limitRate` → user policy → overflow buffer (`terminate` only) → the provider's wire frames.
 */
function buildChain(adapted: Flow<GatewayEvent>, o: ChainOptions): Flow<BridgeElement> {
  let events: Flow<GatewayEvent> = adapted.pipe(operator<GatewayEvent, GatewayEvent>((actual, context) => new ObserveSubscriber(actual, context, o)));
  if (o.scrubber.active) events = events.pipe(scrubEvents(o.scrubber));
  if (o.route.policy.limitRate > 0) events = events.pipe(limitRate<GatewayEvent>(o.route.policy.limitRate));
  if (o.policy) events = o.policy(events, { streamId: o.streamId, route: o.route, budget: o.budget, req: o.req });
  if (o.route.policy.overflow === 'terminate') {
    events = events.pipe(onBackpressureBuffer<GatewayEvent>({ budget: o.budget, overflow: 'terminate', sizeOf: wireBytes }));
  }
  return events.pipe(map((e: GatewayEvent): BridgeElement => e.wire));
}

/** Records the first token's time and the usage the provider reported. */
class ObserveSubscriber extends OperatorSubscriber<GatewayEvent, GatewayEvent> {
  private seenToken = false;

  constructor(
    actual: Subscriber<GatewayEvent>,
    context: FlowContext,
    private readonly o: ChainOptions,
  ) {
    super(actual, context);
  }

  onNext(e: GatewayEvent): void {
    if ((e.type === 'delta' || (e.type === 'frames' && e.delta)) && !this.seenToken) {
      this.seenToken = true;
      this.o.onFirstToken();
    }
    const u = e.type === 'usage' || e.type === 'delta' || e.type === 'frames' ? e.usage : undefined;
    if (u) {
      if (u.inputTokens !== undefined) this.o.usage.inputTokens = u.inputTokens;
      if (u.outputTokens !== undefined) this.o.usage.outputTokens = u.outputTokens;
    }
    this.actual.onNext(e);
  }
}

/** Encoded size of an event's wire frame, bytes (close to what the bridge will write). */
function wireBytes(e: GatewayEvent): number {
  const w = e.wire;
  if (w instanceof SseFrame) return w.bytes.length;
  return Buffer.byteLength(w.data ?? '') + (w.event ? w.event.length + 8 : 0) + (w.id ? Buffer.byteLength(w.id) + 5 : 0) + 8;
}

function upstreamUrl(route: ResolvedRoute & { url: string }, req: Request): string {
  if (route.provider !== 'passthrough') return route.url;
  const q = req.originalUrl.indexOf('?');
  if (q < 0) return route.url;
  const url = new URL(route.url);
  const extra = new URLSearchParams(req.originalUrl.slice(q + 1));
  for (const [k, v] of extra) url.searchParams.append(k, v);
  return url.toString();
}

/** Forwarded client headers (allow-list, hop-by-hop never), then static headers, then the configured credential. */
function upstreamHeaders(req: Request, route: ResolvedRoute, adapter: ProviderAdapter): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of route.forwardHeaders ?? adapter.defaultForwardHeaders) {
    if (NEVER_FORWARD.has(name)) continue;
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
    else if (Array.isArray(v)) out[name] = v.join(', ');
  }
  if (route.provider !== 'passthrough' && out['content-type'] === undefined) out['content-type'] = 'application/json';
  if (route.provider === 'anthropic' && out['anthropic-version'] === undefined) out['anthropic-version'] = '2023-06-01';
  Object.assign(out, lowerKeys(route.headers), adapter.authHeaders(route.apiKey));
  return out;
}

function withoutLastEventId(h: Record<string, string>): Record<string, string> {
  const { 'last-event-id': _omit, ...rest } = h;
  return rest;
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}

/** The `outcome` label of one failed upstream attempt. */
function upstreamOutcome(err: unknown): string {
  if (err instanceof UpstreamHttpError) return `http_${err.status}`;
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof UpstreamResetError) return 'reset';
  if (err instanceof ClientClosedError || err instanceof ShutdownError) return 'aborted';
  return 'error';
}

/** The outcome of a stream ended by `err` (before or after headers). */
function errorOutcome(err: unknown): RelayOutcome {
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof ShutdownError) return 'shutdown';
  if (err instanceof BufferOverflowError || codeOf(err) === 'ERR_TIDEGATE_OVERFLOW') return 'overflow';
  if (err instanceof UpstreamResetError || err instanceof UpstreamTruncatedError) return 'upstream_reset';
  if (err instanceof UpstreamStreamError || err instanceof UpstreamHttpError || err instanceof SseLimitError) return 'upstream_error';
  if (err instanceof ClientClosedError) return 'client_closed';
  return 'upstream_error';
}

function streamOutcome(result: StreamResult): RelayOutcome {
  switch (result.outcome) {
    case 'completed':
    case 'overflow':
    case 'stalled':
    case 'client_closed':
      return result.outcome;
    default:
      return errorOutcome(result.error);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
