import type { Request, Response } from 'express';
import { ByteBudget } from '../../flow/budget';
import type { ProviderAdapter } from '../../providers/types';
import { upstreamRedaction } from '../../http/redact';
import type { AbortSignalLike } from '../../http/abort-signal-like';
import type { ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import type { GatewayMetrics } from '../metrics';
import type { ResumeService } from '../resume/service';
import { policyChain, type StreamPolicyFn } from './chain';
import { StreamContext } from './context';
import { scheduleEarlyCommit } from './early-commit';
import { openStream } from './events';
import { planStream } from './plan';
import { failBeforeHeaders, sendToClient } from './send';
import { clientAsk, upstreamRequest } from './upstream-call';
import { relayWhole } from './whole';

export type { PolicyContext, StreamPolicyFn } from './chain';
export type { RelayOutcome } from './outcome';

/** Per-route collaborators of {@link relay}. */
export interface RelayOptions {
  route: ResolvedRoute & { url: string };
  adapter: ProviderAdapter;
  logger: Logger;
  metrics: GatewayMetrics;
  policy?: StreamPolicyFn | undefined;
  /** Aborted (with a ShutdownError) when the shutdown grace period is over. */
  shutdown: AbortSignal;
  /**
   * Aborted when the drain starts: from then on no stream starts another upstream attempt, and
   * one waiting out a backoff or `Retry-After` answers at once with its last attempt's error.
   */
  draining?: AbortSignalLike | undefined;
  /** Called with the stream's abort function while it runs; the return value unregisters it. */
  register(abort: (reason: unknown) => void): () => void;
  /** The gateway's resume side; with it, a route with `resume` shares each stream for later readers. */
  resume?: ResumeService | undefined;
  /**
   * Takes over the request's admission slot (otherwise released when its response closes) and
   * returns its release: a shared stream holds the slot until the stream itself ends (completed,
   * failed, cancelled after `lingerMs`), so detached streams count against `limits.maxStreams`
   * and `maxStreamsPerClient`.
   */
  holdSlot?: (() => () => void) | undefined;
}

/**
 * Relays one client request to the route's upstream and back: retries while nothing reached the
 * client, commits headers only on a streaming 200, decodes with the provider adapter, applies
 * the route's policies, writes through the demand bridge, and logs one line per stream.
 *
 * The way a stream goes is decided once (see `relay/plan.ts`): a whole answer, a resumable
 * stream, the byte relay (the upstream's own bytes, admitted read by read) or the event relay.
 * Errors never escape: before the headers the client gets an HTTP error in the provider's shape,
 * after them an error event (see `relay/send.ts`).
 */
export async function relay(req: Request, res: Response, options: RelayOptions): Promise<void> {
  const stream = new StreamContext(req, res, options);
  // Chained, not awaited: a suspended async function keeps all its locals for the stream's life.
  // One reaction for both ends (a `.finally()` would add a promise and two closures per stream).
  return relayStream(stream, req, res, options).then(
    () => stream.close(),
    (err: unknown) =>
      failBeforeHeaders(stream, err)
        .catch((failure: unknown) => answerFailed(options, res, failure))
        .finally(() => stream.close()),
  );
}

/**
 * Writing the error answer itself threw (a bug, or an upstream's error nothing can encode): the
 * client's connection is closed and the failure logged. It never escapes: a rejection here would
 * end the process, every other stream with it.
 */
function answerFailed(options: RelayOptions, res: Response, failure: unknown): void {
  options.logger.error('relay error answer failed', { route: options.route.path, error: failure instanceof Error ? failure.message : String(failure) });
  res.destroy();
}

/**
 * {@link relay} up to the delivery: returns once the client's delivery started, with its end,
 * so that nothing of the set-up (the request, the plan, the operator chain) stays referenced
 * from a suspended frame while the stream is held. A resumable stream waits here.
 */
async function relayStream(stream: StreamContext, req: Request, res: Response, options: RelayOptions): Promise<void> {
  const { route } = options;
  const ask = clientAsk(req, route);
  const request = upstreamRequest(req, route, options.adapter, ask, stream.signal);
  // Nothing about the upstream reaches the client: its credentials leave every relayed body and
  // frame, its URL every error.
  const redaction = stream.redactWith(upstreamRedaction(request.url, route.apiKey, request.headers ?? {}));
  const plan = planStream(route, res, ask, options.policy !== undefined);
  if (plan.kind === 'whole') {
    // The upstream call holds what it sends: the client's JSON need not live while it reads the answer.
    req.body = undefined;
    return relayWhole(stream, request);
  }
  // Off (0, the default): no commit to schedule, nothing to stop.
  if (route.policy.earlyCommitMs > 0) {
    stream.early = scheduleEarlyCommit(res, { afterMs: route.policy.earlyCommitMs, heartbeatMs: route.policy.heartbeatMs, headers: { 'X-Tidegate-Stream-Id': stream.streamId } });
  }

  const budget = new ByteBudget(route.policy.maxBufferedBytes);
  const opened = await openStream(stream, request, plan, budget);
  // The upstream call was built from the client's JSON body and sent: only a policy (given the
  // request) may read it again.
  if (options.policy === undefined) req.body = undefined;
  const flow = policyChain(opened.events, {
    route,
    budget,
    scrubber: redaction.keys,
    policy: options.policy,
    req,
    streamId: stream.streamId,
    usage: stream.usage,
    onFirstToken: () => stream.firstToken(),
  });
  // Fields named, not `{ flow, budget, ...opened }`: V8 copies a spread after other properties on its slow path.
  if (route.resume === undefined || options.resume === undefined) return sendToClient(stream, { flow, budget, plan: opened.plan, admission: opened.admission, reader: opened.reader });
  // Resumable: the first client reads the shared stream like any later one; the stream (and
  // this request's lifetime: its timeouts, the shutdown) lasts until no reader comes back.
  const shared = options.resume.share(stream.streamId, flow, { ...route, resume: route.resume }, req, { isKeepAlive: options.adapter.isKeepAlive, aliasOf: options.adapter.resumeAliasOf });
  const releaseSlot = options.holdSlot?.();
  if (releaseSlot !== undefined) void shared.done.finally(releaseSlot);
  const onAbort = (): void => shared.abort(stream.signal.reason);
  if (stream.signal.aborted) onAbort();
  stream.signal.addEventListener('abort', onAbort);
  try {
    await sendToClient(stream, { flow: shared.reader, budget, plan: opened.plan, admission: opened.admission, reader: opened.reader });
    shared.cancelIfUnread();
    await shared.done;
  } finally {
    stream.signal.removeEventListener('abort', onAbort);
  }
}
