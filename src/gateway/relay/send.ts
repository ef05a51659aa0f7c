import type { IncomingMessage } from 'node:http';
import { TimeoutError } from '../../errors';
import { sendFlow, type BridgeElement, type StreamHandle, type StreamResult } from '../../express/send-flow';
import type { ByteBudget } from '../../flow/budget';
import type { Flow } from '../../flow/flow';
import { UpstreamHttpError } from '../../http/errors';
import { encodeBody } from '../../http/body-charset';
import type { Scrubber } from '../../http/redact';
import type { ProviderAdapter } from '../../providers/types';
import { codeOf } from '../../express/error-shapes';
import { kernelQueueBytes } from '../../http/socket-options';
import type { KernelBytes, LiveStream, StreamSnapshot } from '../metrics';
import type { StreamContext } from './context';
import { ClientClosedError, errnoOf, errorOutcome, streamOutcome } from './outcome';
import { FRAME_PREFETCH } from './plan';
import type { HeldUpstream, OpenedStream } from './events';
import type { ReadAdmission } from './read-admission';

/** What {@link sendToClient} writes (`flow`, through the policies) and watches. */
export interface Delivery extends Omit<OpenedStream, 'events'> {
  flow: Flow<BridgeElement>;
  budget: ByteBudget;
}

/**
 * Writes the stream to the client through the demand bridge (headers are committed here), keeps
 * it visible to the metrics and `/debug/streams` while it runs, and logs how it ended.
 */
export function sendToClient(stream: StreamContext, d: Delivery): Promise<void> {
  const { res, env } = stream;
  const { route, metrics } = env;
  const { adapter } = stream;
  const { plan, budget, admission } = d;
  const view = new DeliveryView(stream, budget, d.reader, admission);
  const untrack = metrics.track(view);
  stream.early?.stop();
  // An early commit that never fired has nothing left to do: its timer and closures go now, not
  // when the stream ends.
  if (stream.early?.committed === false) stream.early = undefined;
  const handle = sendFlow(res, d.flow, {
    prefetch: plan.kind === 'bytes' ? FRAME_PREFETCH : route.policy.prefetch,
    maxElementBytes: plan.kind === 'events' ? plan.maxElementBytes : undefined,
    onWritable: admission?.onWritten,
    budget,
    stallTimeoutMs: route.policy.stallTimeoutMs,
    heartbeatMs: route.policy.heartbeatMs,
    kernelUnsentBytes: route.policy.kernelUnsentBytes,
    formatError: (e) => adapter.formatError(e),
    sendHttpError: (r, e) => adapter.sendHttpError(r, e),
    signal: stream.signal,
    headers: { 'X-Tidegate-Stream-Id': stream.streamId },
  });
  view.handle = handle;
  if (admission !== undefined) admission.flushWrites = () => handle.flush();
  stream.handOverClientWatch();
  // Chained, not awaited: a suspended async function would keep `d` (the operator chain) and
  // its other locals for the stream's life. Not an async function either: its promise would be
  // resolved with this one through two more closures and a reaction. Called from async
  // functions only, which turn a throw above into their rejection.
  return handle.done.then(
    (result) => {
      untrack();
      delivered(stream, result);
    },
    (err: unknown) => {
      untrack();
      throw err;
    },
  );
}

/**
 * What the metrics and `/debug/streams` read of a stream while it is delivered: one object with
 * methods per stream rather than a closure per reading.
 */
class DeliveryView implements LiveStream {
  handle: StreamHandle | undefined;

  constructor(
    private readonly stream: StreamContext,
    private readonly budget: ByteBudget,
    private readonly reader: HeldUpstream | undefined,
    private readonly admission: ReadAdmission | undefined,
  ) {}

  bufferedBytes(): number {
    return this.budget.used;
  }

  upstreamPaused(): boolean {
    const body = this.reader?.source;
    return body !== undefined && body.isPaused() && body.readableLength > 0 && !body.readableEnded;
  }

  describe(): StreamSnapshot {
    const { stream, reader } = this;
    return {
      streamId: stream.streamId,
      route: stream.env.route.path,
      ageMs: stream.elapsed(),
      bridge: this.handle?.state(),
      upstream: reader === undefined ? undefined : { bufferedBytes: reader.bufferedBytes(), readsSized: reader.readsSized(), paused: reader.source.isPaused(), ended: reader.source.readableEnded },
      heldReadDemand: this.admission?.heldDemand,
      kernel: this.kernelBytes(),
    };
  }

  kernelBytes(): KernelBytes {
    const client = kernelQueueBytes(this.stream.res.socket);
    // The body is the IncomingMessage itself unless compressed: its socket is the upstream's.
    const upstreamSocket = this.reader === undefined ? undefined : (this.reader.source as Partial<IncomingMessage>).socket;
    return { clientSendQueue: client?.sendQueue, clientUnsent: client?.unsent, upstreamReceiveQueue: kernelQueueBytes(upstreamSocket)?.receiveQueue };
  }
}

/** Counts and logs a delivery that ended. */
function delivered(stream: StreamContext, result: StreamResult): void {
  const { res, env } = stream;
  env.metrics.bytesOut.inc({ route: env.route.path }, result.bytes);
  stream.finish(streamOutcome(result), {
    status: res.statusCode,
    ttftMs: stream.ttftMs,
    events: result.events,
    bytes: result.bytes,
    peakBufferedBytes: result.peakBufferedBytes,
    errorCode: result.error === undefined ? undefined : codeOf(result.error),
    errno: errnoOf(result.error),
    timeoutKind: result.error instanceof TimeoutError ? result.error.kind : undefined,
  });
}

/** The method tokens of an `Allow` value (RFC 9110 §10.2.1), joined with `, `; anything else dropped. */
function methodList(allow: string): string {
  return allow
    .split(',')
    .map((m) => m.trim())
    .filter((m) => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(m))
    .join(', ');
}

/** An error body with nothing to read: whitespace, control characters (NUL, U+0085 …) and U+FFFD only, or none. */
const UNREADABLE_BODY = /^[\s\p{Cc}\ufffd]*$/u;

/**
 * An upstream's HTTP error relayed: its status and `Retry-After`, and its body, `Content-Type` and
 * a 405's `Allow` through `scrub` (an upstream may echo a key anywhere; without a scrubber none of
 * the three is relayed). The body goes back in the charset it was read in where Node writes it (a
 * latin-1 page byte for byte), else in UTF-8 under a `Content-Type` that says so. An answer with
 * no body to relay (none came, nothing readable came, or it could not be read or decoded) gets
 * the provider's error shape from `adapter` instead, with the upstream's status, so a client's
 * SDK has a message.
 */
function sendUpstreamHttpError(res: StreamContext['res'], err: UpstreamHttpError, scrub: Scrubber | undefined, adapter: ProviderAdapter): void {
  res.status(err.status);
  if (err.retryAfterMs !== undefined) res.setHeader('Retry-After', String(Math.ceil(err.retryAfterMs / 1000)));
  const allow = scrub === undefined || err.allow === undefined ? '' : methodList(scrub.string(err.allow));
  if (allow !== '') res.setHeader('Allow', allow);
  if (UNREADABLE_BODY.test(err.body)) {
    adapter.sendHttpError(res, err);
    return;
  }
  let body: Buffer = Buffer.alloc(0);
  let contentType: string | undefined;
  if (scrub !== undefined) {
    const encoded = encodeBody(scrub.json(err.body), err.contentType);
    body = scrub.wideBytes(encoded.bytes);
    contentType = encoded.contentType === undefined ? undefined : scrub.string(encoded.contentType);
  }
  res.setHeader('Content-Type', contentType ?? 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/**
 * A stream that failed before the bridge took it: nothing reached the client yet, so it gets an
 * HTTP error in the provider's shape (an upstream HTTP error is relayed with its status), unless
 * it already left. Resolves once that answer reached the client, or the client was cut (see
 * {@link StreamContext.wholeDelivered}), and logs how it ended.
 */
export async function failBeforeHeaders(stream: StreamContext, err: unknown): Promise<void> {
  const { res } = stream;
  const clientGone = err instanceof ClientClosedError || res.destroyed;
  const answered = !clientGone && !res.headersSent;
  if (answered) {
    if (err instanceof UpstreamHttpError) sendUpstreamHttpError(res, err, stream.redaction?.errors, stream.adapter);
    else stream.adapter.sendHttpError(res, err);
  } else if (!clientGone && stream.early?.committed === true) stream.early.fail(err, (e) => stream.adapter.formatError(e));
  // An upstream error body may be up to 64 KiB: held, and cut, as a whole answer is.
  const cut = answered ? await stream.wholeDelivered() : undefined;
  const why = cut ?? err;
  stream.finish(cut !== undefined ? errorOutcome(cut) : clientGone ? 'client_closed' : errorOutcome(err), {
    upstream: stream.redaction?.url,
    errorDetail: stream.redaction?.detail(err),
    errno: errnoOf(err),
    status: clientGone ? 499 : res.statusCode,
    errorCode: codeOf(why),
    timeoutKind: why instanceof TimeoutError ? why.kind : undefined,
    upstreamStatus: err instanceof UpstreamHttpError ? err.status : undefined,
  });
}
