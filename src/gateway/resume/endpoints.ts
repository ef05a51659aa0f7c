import type { Request, Response } from 'express';
import { codeOf } from '../../express/error-shapes';
import { sendFlow, type StreamResult } from '../../express/send-flow';
import { ByteBudget } from '../../flow/budget';
import { Flow } from '../../flow/flow';
import type { Subscriber, Subscription } from '../../flow/types';
import type { ProviderAdapter } from '../../providers/types';
import type { RecordRefusal } from '../admission';
import type { ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import { ResumeForbiddenError, ResumeGapError, ResumeRequestError, StreamNotFoundError, resumeRefusalReason } from './errors';
import { singleQueryValue } from './query';
import { credentialHash, credentialMatches, isStreamId, parseEventId } from './ids';
import type { ResumeService } from './service';
import type { StoredStream } from './store';

/** Path of the resume endpoint (`:streamId` is the `x-tidegate-stream-id` of the original response). */
export const RESUME_PATH = '/v1/streams/:streamId';

/** What {@link serveResume} needs of the gateway. */
export interface ResumeEndpointDeps {
  service: ResumeService;
  logger: Logger;
  /** The route a stream was started on (its policy and error shape serve the resume). */
  routeOf(path: string): ResolvedRoute | undefined;
  adapterOf(path: string): ProviderAdapter;
  /** Error shape of a request whose stream is unknown (its route is not known either). */
  fallback(req: Request): Pick<ProviderAdapter, 'sendHttpError'>;
  /** Aborted when the gateway ends every stream (shutdown). */
  signal: AbortSignal;
  /** Counts and logs a refused resume as any refusal (`Admission.record`). */
  refused: RecordRefusal;
}

/**
 * Logs a resume that failed with `error`: counted and logged as any refusal (a `refused` line,
 * within the refusal log's rate limit) when it refuses the resume (see {@link resumeRefusalReason}),
 * else (a store failure) one `resume` line with `outcome: "refused"` and `fields`.
 */
export function recordResumeRefusal(
  deps: Pick<ResumeEndpointDeps, 'refused' | 'logger'>,
  req: Request,
  res: Response,
  error: unknown,
  fields: { streamId?: string | undefined; route?: string | undefined },
): void {
  const reason = resumeRefusalReason(error);
  if (reason !== undefined) deps.refused(req, res.headersSent ? 499 : (error as { status: number }).status, { code: codeOf(error), reason });
  else deps.logger.info('resume', { ...fields, outcome: 'refused', errorCode: codeOf(error) });
}

/** Where a resume was asked and from which point, when not `GET /v1/streams/{streamId}` with `Last-Event-ID` / `?after`. */
export interface ResumeOptions {
  /** The path of the resumable route whose own URL was asked: only a stream that route started is found there. */
  ownRoute?: string | undefined;
  /**
   * The seq of the last event the client has, instead of `Last-Event-ID` / `after`: a provider's
   * own position (the Responses `starting_after`) mapped to a seq with the stream's log.
   */
  resumeAt?: ((stored: StoredStream) => Promise<number>) | undefined;
  /**
   * That own position itself, handed to the adapter's `resumedAfter`, so the error events a failed
   * stream ends with are not sent again to a client that has them.
   */
  position?: number | undefined;
}

/**
 * Serves one resume: `GET /v1/streams/{streamId}` with `Last-Event-ID: <streamId>:<seq>` or
 * `?after=<seq>` (neither: from the first event), any route's stream; or a resumable passthrough
 * route's own URL ({@link ResumeOptions.ownRoute}) with that `Last-Event-ID`, only a stream that
 * route started (another route's stream is 404 there). Replays every event after `seq` from the stream's log, then follows it
 * live, and ends as the original ends (its terminator, or its error event in the route's
 * protocol). Refusals come before any header, in the route's error shape: 404 unknown or expired
 * stream, 403 another credential, 400 an event this stream never sent, 410
 * `ERR_TIDEGATE_RESUME_GAP` when some events after `seq` left the window; each is counted and
 * logged as any refusal ({@link recordResumeRefusal}). See {@link ResumeOptions} for a route's
 * own URL and a provider's own position.
 *
 * Resolves when the resumed response ended.
 */
export async function serveResume(req: Request, res: Response, streamId: string, deps: ResumeEndpointDeps, options: ResumeOptions = {}): Promise<void> {
  const { ownRoute, resumeAt, position } = options;
  const { service, logger } = deps;
  let errorShape: Pick<ProviderAdapter, 'sendHttpError'> = ownRoute === undefined ? deps.fallback(req) : deps.adapterOf(ownRoute);
  let routePath = '';
  try {
    const stored = isStreamId(streamId) ? await service.find(streamId) : undefined;
    if (stored === undefined) throw new StreamNotFoundError();
    // A route's own URL resumes only the streams it started.
    if (ownRoute !== undefined && stored.meta.routePath !== ownRoute) throw new StreamNotFoundError();
    routePath = stored.meta.routePath;
    const route = deps.routeOf(routePath);
    if (route === undefined) throw new StreamNotFoundError();
    // Its own state, followed through the replayed events, so an error numbers on as the original's.
    const base = deps.adapterOf(routePath);
    const adapter = base.forStream?.() ?? base;
    errorShape = adapter;
    if (position !== undefined) adapter.resumedAfter?.(position);
    if (!credentialMatches(stored.meta.credentialHash, credentialHash(req.headers))) throw new ResumeForbiddenError();
    const afterSeq = resumeAt === undefined ? resumePoint(req, streamId) : await resumeAt(stored);
    if (adapter.observe !== undefined) {
      // The events the client already has set that state too (the response id of the first one).
      const log = await stored.snapshot();
      for (let i = 0; i < log.events.length && log.firstSeq + i <= afterSeq; i++) adapter.observe(log.events[i] as Buffer);
    }
    const events = await stored.reader(afterSeq);
    service.metrics.resumes.inc({ route: routePath });
    const handle = sendFlow(res, endAfterSubscribe(events, adapter.observe), {
      prefetch: route.policy.prefetch,
      budget: new ByteBudget(route.policy.maxBufferedBytes),
      stallTimeoutMs: route.policy.stallTimeoutMs,
      heartbeatMs: route.policy.heartbeatMs,
      formatError: (e) => adapter.formatError(e),
      sendHttpError: (r, e) => adapter.sendHttpError(r, e),
      signal: deps.signal,
      headers: { 'X-Tidegate-Stream-Id': streamId },
    });
    const result: StreamResult = await handle.done;
    logger.info('resume', { streamId, route: routePath, afterSeq, outcome: result.outcome, events: result.events, bytes: result.bytes, errorCode: result.error === undefined ? undefined : codeOf(result.error) });
  } catch (err) {
    if (err instanceof ResumeGapError) service.metrics.gapRefusals.inc({ route: routePath });
    recordResumeRefusal(deps, req, res, err, { streamId: isStreamId(streamId) ? streamId : undefined, route: routePath || undefined });
    if (!res.headersSent) errorShape.sendHttpError(res, err);
    else res.destroy();
  }
}

/** The last event the client has: `Last-Event-ID` of this stream, else `?after`, else 0. */
function resumePoint(req: Request, streamId: string): number {
  const header = req.headers['last-event-id'];
  if (typeof header === 'string' && header !== '') {
    const id = parseEventId(header);
    if (id === undefined || id.streamId !== streamId) throw new ResumeRequestError(`Last-Event-ID ${JSON.stringify(header.slice(0, 80))} names no event of stream ${streamId}`);
    return id.seq;
  }
  const after = singleQueryValue(req, 'after');
  if (after === undefined) return 0;
  if (!/^\d{1,15}$/.test(after)) throw new ResumeRequestError('after must be the seq of an event (a non-negative integer)');
  return Number(after);
}

/**
 * `events` with an end signalled while it is being subscribed (a stream that already ended,
 * resumed after its last event) held until the subscription returned: `sendFlow` then commits
 * the SSE headers first, and the resume ends as the original did, with its error event in the
 * route's protocol (not an HTTP error) or a clean end. The log was found valid before, so a
 * resume that gets this far is a 200. Each event is shown to `observe` on its way.
 */
function endAfterSubscribe(events: Flow<Buffer>, observe?: (event: Buffer) => void): Flow<Buffer> {
  return new Flow<Buffer>((actual) => {
    let subscribing = true;
    let held: (() => void) | undefined;
    const relay: Subscriber<Buffer> = {
      onSubscribe: (s: Subscription) => actual.onSubscribe(s),
      onNext: (b) => {
        observe?.(b);
        actual.onNext(b);
      },
      onError: (e) => (subscribing ? (held = () => actual.onError(e)) : actual.onError(e)),
      onComplete: () => (subscribing ? (held = () => actual.onComplete()) : actual.onComplete()),
    };
    events.subscribeWith(relay);
    subscribing = false;
    if (held !== undefined) queueMicrotask(held);
  });
}
