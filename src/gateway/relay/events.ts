import type { Readable } from 'node:stream';
import type { ByteBudget } from '../../flow/budget';
import type { Flow } from '../../flow/flow';
import { sseDecode, sseFrames } from '../../sse';
import { adaptFrames, adaptProvider } from '../../providers/adapt';
import type { GatewayEvent } from '../../providers/types';
import { openUpstreamStream, type UpstreamRequest, type UpstreamStream } from '../../http/request';
import { withRetries } from '../../http/retry';
import type { StreamContext } from './context';
import { settlePlan, type BytesPlan, type EventsPlan, type RelayPlan, type StreamingPlan } from './plan';
import { ReadAdmission } from './read-admission';
import { openResumableStream } from './resumable';
import { upstreamOutcome } from './outcome';
import { withoutLastEventId } from './upstream-call';
import { EventIdle, frameHasEvent } from './event-idle';

/**
 * The upstream call as a stream holds it: its body, its unread bytes and read sizing, and the
 * body's stream (`source`), without node-fetch's `Response` (its headers are read once, when the
 * upstream answers; about 1 KB per held stream).
 */
export type HeldUpstream = Omit<UpstreamStream, 'response'> & { source: Readable };

/** A stream whose upstream answered: its events, the way they go, and who admits its bytes. */
export interface OpenedStream {
  events: Flow<GatewayEvent>;
  plan: StreamingPlan;
  /** The byte relay's admission of upstream reads. */
  admission?: ReadAdmission | undefined;
  /** The upstream call (not on resumable routes, which read through connectSse). */
  reader?: HeldUpstream | undefined;
}

/**
 * Opens the upstream for a streaming plan and returns its events once it answered. The byte
 * relay's reads are sized by a {@link ReadAdmission} over `budget`; the plan is settled by the
 * response (an unsized reader may turn a small byte relay into an event relay).
 */
export async function openStream(stream: StreamContext, request: UpstreamRequest, plan: StreamingPlan, budget: ByteBudget): Promise<OpenedStream> {
  if (plan.kind === 'resumable') {
    const events = await resumableEvents(stream, request, budget);
    sent(request);
    return { events, plan };
  }
  let admission: ReadAdmission | undefined;
  if (plan.kind === 'bytes') {
    admission = new ReadAdmission(budget, stream.res);
    // The peak also counts what the upstream reader takes in while nobody asks.
    request.onRead = () => void budget.observe();
    request.readBytes = admission.readBytes;
    request.bodyReleased = admission.bodyReleased;
  }
  // Timed by events, not bytes (`idleTimedByEvents`): an upstream that sends only comments makes no progress.
  const idleMs = request.idleTimeoutMs ?? 0;
  const reader = held(await openRelayed(stream, request));
  sent(request);
  const settled: RelayPlan = settlePlan(plan, reader, stream.env.route, stream.res);
  if (settled.kind === 'bytes') return { events: byteRelayEvents(reader, settled, admission as ReadAdmission, stream, idleMs), plan: settled, admission, reader };
  return { events: eventRelayEvents(reader, settled, stream, idleMs, budget), plan: settled, reader };
}

/**
 * The upstream answered: no attempt sends `request` again (retries end at the status line, and a
 * resumable stream's reconnects keep their own copy), so its body and headers go now rather than
 * when the stream ends. The client's JSON body is read only to build them.
 */
function sent(request: UpstreamRequest): void {
  request.body = undefined;
  request.headers = undefined;
}

/** What a stream keeps of its upstream call for its whole life (see {@link HeldUpstream}). */
function held(upstream: UpstreamStream): HeldUpstream {
  const { body, bufferedBytes, readsSized } = upstream;
  return { body, bufferedBytes, readsSized, source: upstream.response.body as unknown as Readable };
}

/**
 * Opens the upstream stream, retried as the route allows: only this call is retried, since it
 * ends at the upstream's status line, before the client saw a byte.
 */
function openRelayed(stream: StreamContext, request: UpstreamRequest): Promise<UpstreamStream> {
  return withRetries(() => stream.attempt(() => openUpstreamStream(request)), stream.env.route.retry, stream.retryOptions());
}

/**
 * The `bytes` way: the upstream's own bytes, admitted read by read ({@link ReadAdmission}), cut
 * into frames of whole events by `sseFrames` and read by the adapter without re-encoding. The
 * budget counts every userland byte: the reader's unread bytes, the frames waiting in
 * `sseFrames`, and the bridge.
 */
function byteRelayEvents(upstream: HeldUpstream, plan: BytesPlan, admission: ReadAdmission, stream: StreamContext, idleMs: number): Flow<GatewayEvent> {
  admission.admit(upstream);
  const frames = { maxEventBytes: plan.maxEventBytes, maxFrameBytes: plan.frameBytes, queued: admission.queued };
  if (idleMs === 0) return upstream.body.pipe(admission.gate(), sseFrames(frames), adaptFrames(stream.adapter));
  // A frame of comments only is relayed but is no event: it does not move the idle deadline.
  const idle = new EventIdle(idleMs, frameHasEvent);
  return upstream.body.pipe(idle.bytes(), admission.gate(), sseFrames(frames), idle.events(), adaptFrames(stream.adapter));
}

/**
 * The `events` way: the upstream body decoded event by event and re-encoded by the adapter. Its
 * budget covers the chain, the bridge and the parser's unfinished line and event (count-based
 * demand cannot keep room for the upstream reader); the reader's ≤ 20 KiB and the parser's one
 * read come on top. An event can never be larger than the budget: the parser refuses one past
 * `maxBufferedBytes` as it arrives (`ERR_TIDEGATE_SSE_LIMIT`, the upstream cancelled).
 */
function eventRelayEvents(upstream: HeldUpstream, plan: EventsPlan, stream: StreamContext, idleMs: number, budget: ByteBudget): Flow<GatewayEvent> {
  const maxEventBytes = Math.min(plan.maxEventBytes, budget.maxBytes);
  const decode = sseDecode({ maxEventBytes, maxLineBytes: maxEventBytes, attachHeld: (held) => budget.attachExternal(held) });
  if (idleMs === 0) return upstream.body.pipe(decode, adaptProvider(stream.adapter));
  // The parser dispatches events only: comments and blank lines never reach the deadline.
  const idle = new EventIdle(idleMs);
  return upstream.body.pipe(idle.bytes(), decode, idle.events(), adaptProvider(stream.adapter));
}

/**
 * The `resumable` way: the upstream read through `connectSse`, so a dropped upstream is
 * reconnected with `Last-Event-ID` (its own backoff) even after the first byte. Resolves once
 * its first connection answered. As on the `events` way, the budget counts the current
 * connection's unfinished line and event, and an event larger than the budget is refused as it
 * arrives (`ERR_TIDEGATE_SSE_LIMIT`, no reconnect).
 */
async function resumableEvents(stream: StreamContext, request: UpstreamRequest, budget: ByteBudget): Promise<Flow<GatewayEvent>> {
  const { route } = stream.env;
  const terminator = route.terminator;
  const maxEventBytes = Math.min(route.policy.maxEventBytes, budget.maxBytes);
  // Every request counts as on other routes: `attempts`, one upstream request per connection by
  // its outcome (`ok` once it answered), and a retry per failed attempt before the first answer
  // that another attempt followed (later reconnects count as attempts and requests, not as
  // retries). A wait that ends with the stream (client gone, totalMs, drain) starts no request.
  let inFlight = false;
  let opened = false;
  let failedBeforeOpen: { error: unknown } | undefined;
  // The request in flight got its answer, or ended without one: counted once, by `outcome`.
  const settle = (outcome: string): void => {
    if (inFlight) stream.countUpstream(outcome);
    inFlight = false;
  };
  const decoded = await openResumableStream({
    url: request.url,
    method: request.method ?? 'GET',
    headers: withoutLastEventId(request.headers ?? {}),
    body: request.body,
    signal: stream.signal,
    // As withRetries' stopRetries on the other routes: the drain starts no new first attempt.
    stopBeforeOpen: stream.env.draining,
    lastEventId: String(stream.req.headers['last-event-id'] ?? ''),
    maxAttempts: route.retry.maxAttempts,
    maxReconnects: route.retry.maxReconnects,
    maxRetryAfterMs: route.retry.maxRetryAfterMs,
    initialDelayMs: route.retry.baseDelayMs,
    maxDelayMs: route.retry.maxDelayMs,
    idleTimeoutMs: route.timeouts.idleMs,
    connectTimeoutMs: request.connectTimeoutMs,
    firstByteTimeoutMs: request.firstByteTimeoutMs,
    followRedirects: request.followRedirects,
    route: request.route,
    // As on the event relay: the unfinished line and event count in the budget, and one past
    // it is refused as it arrives (ERR_TIDEGATE_SSE_LIMIT).
    maxEventBytes,
    maxLineBytes: maxEventBytes,
    attachHeld: (held) => budget.attachExternal(held),
    isTerminal: terminator ? (e) => (terminator.event ?? e.type) === e.type && (terminator.data ?? e.data) === e.data : undefined,
    onConnecting: () => {
      stream.attempts++;
      inFlight = true;
      if (failedBeforeOpen !== undefined) stream.countRetry(failedBeforeOpen.error);
      failedBeforeOpen = undefined;
    },
    onOpen: () => {
      opened = true;
      settle('ok');
    },
    onReconnect: (error) => {
      settle(upstreamOutcome(error));
      if (!opened) failedBeforeOpen = { error };
    },
    // A request still in flight when the stream ends (its last reconnect failed, the client left,
    // the grace ran out) counts by how it ended.
    onEnd: (error) => settle(error === undefined ? 'aborted' : upstreamOutcome(error)),
  }).catch((err: unknown) => {
    settle(upstreamOutcome(err));
    throw err;
  });
  return decoded.pipe(adaptProvider(stream.adapter));
}
