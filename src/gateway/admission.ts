import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { TidegateError } from '../errors';
import { credentialOf } from './credential';
import { onServerClose } from '../http/node-hooks';
import type { ProviderAdapter } from '../providers/types';
import type { AdmissionLimits } from './config';
import type { Logger } from './logger';
import type { GatewayMetrics } from './metrics';
import { RefusalLog } from './refusal-log';

/** Why a request was refused; the `reason` label of `tidegate_admission_refusals_total`. */
export type RefusalReason =
  | 'connections'
  | 'streams'
  | 'client_streams'
  | 'pipelining'
  | 'body_too_large'
  | 'body_timeout'
  | 'body_encoding'
  | 'body_too_deep'
  | 'body_too_many_values'
  | 'bad_request'
  | 'media_type'
  | 'method'
  | 'shutdown'
  | 'resume_not_found'
  | 'resume_forbidden'
  | 'resume_gap'
  | 'response_in_progress';

/**
 * Reasons that refuse a request for what it asks, not for the load: its connection stays open
 * for the client's next request when nothing of the body is left unread.
 */
const REQUEST_REASONS: ReadonlySet<RefusalReason> = new Set(['bad_request', 'media_type']);

/**
 * A request refused before it reached the upstream. `status` is the HTTP status the client gets
 * (400, 413, 408, 415, 429, 503); `retryAfterSeconds`, when set, is sent as `Retry-After`.
 *
 * | code | status | reason |
 * | --- | --- | --- |
 * | `ERR_TIDEGATE_BAD_REQUEST` | 400 | `bad_request` (a body that is no JSON object, a path naming no model) |
 * | `ERR_TIDEGATE_UNSUPPORTED_MEDIA_TYPE` | 415 | `media_type` |
 * | `ERR_TIDEGATE_BODY_TOO_LARGE` | 413 | `body_too_large` |
 * | `ERR_TIDEGATE_BODY_TIMEOUT` | 408 | `body_timeout` |
 * | `ERR_TIDEGATE_BODY_ENCODING` | 415 | `body_encoding` |
 * | `ERR_TIDEGATE_BODY_TOO_DEEP` | 400 | `body_too_deep` |
 * | `ERR_TIDEGATE_BODY_TOO_MANY_VALUES` | 413 | `body_too_many_values` |
 * | `ERR_TIDEGATE_CLIENT_LIMIT` | 429 | `client_streams` |
 * | `ERR_TIDEGATE_OVER_CAPACITY` | 503 | `connections`, `streams` |
 * | `ERR_TIDEGATE_PIPELINE_LIMIT` | 503 | `pipelining` |
 */
export class AdmissionError extends TidegateError {
  constructor(
    code: string,
    message: string,
    readonly status: number,
    readonly reason: RefusalReason,
    readonly retryAfterSeconds?: number | undefined,
  ) {
    super(code, message);
    this.name = 'AdmissionError';
  }
}

/** Ends a stream slot taken by {@link Admission.admitStream}; calling it again does nothing. */
export type ReleaseStream = () => void;

/** A stream slot bound to its request's response by {@link bindSlot}. */
export interface BoundSlot {
  /** The stream ended: releases the slot now, unless {@link hold} took it over. */
  end(): void;
  /**
   * Takes the slot over from the response: neither its `'close'` nor {@link end} releases it
   * any more, only the function returned (once). For a stream that outlives its first response.
   */
  hold(): ReleaseStream;
}

/**
 * Binds a stream slot to its request: it is released exactly once, on the response's `'close'`
 * or the stream's end ({@link BoundSlot.end}), whichever comes first, or at once when the
 * response closed before (its client left while the slot was being taken).
 *
 * @example
 * const slot = bindSlot(release, res);
 * track(relay(req, res, { holdSlot: slot.hold, … }).finally(slot.end));
 */
export function bindSlot(release: ReleaseStream, res: ServerResponse): BoundSlot {
  let held = false;
  const onClose = (): void => {
    if (held) return;
    held = true;
    res.off('close', onClose);
    release();
  };
  if (res.closed) onClose();
  // 'close' comes once; `on` spares the once wrapper that would live as long as the stream.
  else res.on('close', onClose);
  return {
    end: onClose,
    hold() {
      if (held) return () => undefined;
      held = true;
      res.off('close', onClose);
      return release;
    },
  };
}

/**
 * The refusal of a request past the pipelined requests one connection may have waiting
 * (`ERR_TIDEGATE_PIPELINE_LIMIT`, 503); the connection closes after its answer.
 */
export function pipelineLimitError(maxWaiting: number, retryAfterSeconds?: number | undefined): AdmissionError {
  return new AdmissionError('ERR_TIDEGATE_PIPELINE_LIMIT', `this connection has ${maxWaiting} pipelined requests waiting for their turn; send the rest on another connection`, 503, 'pipelining', retryAfterSeconds);
}

/** Connection and stream caps of one gateway app, with the refusals they answer. */
export interface Admission {
  /**
   * Counts a new client connection (`server.on('connection', …)`) until it closes. A connection
   * past `maxConnections` is kept only to answer its first request with 503 and close.
   */
  trackConnection(socket: Socket): void;
  /** Open client connections counted now. */
  readonly connections: number;
  /** Streams admitted and not yet released. */
  readonly streams: number;
  /** `undefined` when the request's connection is within `maxConnections`, else the 503 to answer. */
  checkConnection(req: IncomingMessage): AdmissionError | undefined;
  /**
   * The refusal {@link admitStream} would answer now, taking no slot: `undefined` when a slot is
   * free for the request's client. Checked before a body is read, so that a request over capacity
   * costs no body bytes; the slot itself is taken once the body is in.
   */
  checkStream(req: IncomingMessage): AdmissionError | undefined;
  /**
   * Takes a stream slot for the request's client: a release function, or the refusal (503 when
   * the gateway holds `maxStreams`, 429 when this client holds `maxStreamsPerClient`).
   */
  admitStream(req: IncomingMessage): ReleaseStream | AdmissionError;
  /**
   * Answers `error` in the route's error shape (`adapter.sendHttpError`) with `Connection: close`
   * and `Retry-After` when it has one, counts it by reason, logs it (one `refused` line, at most
   * `REFUSAL_LINES_PER_SECOND` a second, see {@link RefusalLog}), and closes the
   * connection once the answer is flushed (the unread rest of a body is never read). A request
   * refused for what it asks (`bad_request`, `media_type`) keeps its connection when its body
   * was read to the end.
   */
  refuse(req: IncomingMessage, res: ServerResponse, adapter: Pick<ProviderAdapter, 'sendHttpError'>, error: AdmissionError): void;
  /**
   * Counts and logs a refusal answered by its own code, as {@link refuse} does (by reason, one
   * `refused` line within the same rate limit): the drain's 503, a refused resume, a 405.
   * `status` is the status answered, 499 when the answer could no longer be written.
   */
  record: RecordRefusal;
  /** Writes the summary of refusals not logged yet (see {@link RefusalLog.flush}); the drain calls it. */
  flushLog(): void;
}

/**
 * Counts and logs one refusal answered elsewhere (see {@link Admission.record}); `bodyComplete`
 * rides on the drain's lines.
 */
export type RecordRefusal = (req: IncomingMessage, status: number, refusal: { readonly code: string; readonly reason: RefusalReason; readonly bodyComplete?: boolean | undefined }) => void;

/**
 * The refusal of a request the gateway cannot forward as it is (`ERR_TIDEGATE_BAD_REQUEST`, 400,
 * reason `bad_request`): a body that is no JSON or no JSON object, a path that names no model.
 */
export function badRequestError(message: string): AdmissionError {
  return new AdmissionError('ERR_TIDEGATE_BAD_REQUEST', message, 400, 'bad_request');
}

/** After a refusal, bytes still arriving are discarded for at most this long, ms, … */
export const CLOSE_LINGER_MS = 1000;
/** … and at most this many bytes; then the socket is destroyed. */
export const CLOSE_LINGER_BYTES = 4 * 1024 * 1024;

/**
 * Admission control, as nginx's `limit_conn` and Envoy's overload manager do it: caps on open
 * connections, on concurrent streams and on concurrent streams per client, each refused in the
 * client's protocol with `Retry-After`. A client is keyed by {@link clientKeyOf}, only while
 * `maxStreamsPerClient` is on.
 *
 * The counts live in this object: one per gateway app. A slot is held from admission (after
 * the request's body is read) until the stream's release; an upload in progress holds none, and
 * is bounded by `maxConnections`, the body limits and `requestBodyTimeoutMs` instead.
 *
 * Without `logger`, refusals are counted but not logged.
 *
 * @example
 * const admission = createAdmission(config.limits, metrics, logger);
 * server.on('connection', (socket) => admission.trackConnection(socket));
 * const release = admission.admitStream(req);
 * if (release instanceof AdmissionError) return admission.refuse(req, res, adapter, release);
 */
export function createAdmission(limits: AdmissionLimits, metrics: GatewayMetrics, logger?: Logger | undefined): Admission {
  const refusals = logger === undefined ? undefined : new RefusalLog(logger);
  let connections = 0;
  let streams = 0;
  const perClient = new Map<string, number>();
  const overCap = new WeakSet<Socket>();
  const retryAfter = limits.retryAfterSeconds;
  const overStreams = (): AdmissionError | undefined =>
    limits.maxStreams > 0 && streams >= limits.maxStreams ? new AdmissionError('ERR_TIDEGATE_OVER_CAPACITY', `the gateway holds its ${limits.maxStreams} streams; retry later`, 503, 'streams', retryAfter) : undefined;
  const overClient = (key: string): AdmissionError | undefined =>
    (perClient.get(key) ?? 0) >= limits.maxStreamsPerClient
      ? new AdmissionError('ERR_TIDEGATE_CLIENT_LIMIT', `this client holds its limit of ${limits.maxStreamsPerClient} concurrent stream${limits.maxStreamsPerClient === 1 ? '' : 's'}; retry when one ends`, 429, 'client_streams', retryAfter)
      : undefined;

  const record: RecordRefusal = (req, status, { code, reason, bodyComplete }) => {
    metrics.admissionRefusals.inc({ reason });
    // Not Express's `path`: below a mount point (an error handler's) it lacks the mount's prefix.
    const path = ((req as { originalUrl?: string }).originalUrl ?? req.url ?? '').split('?')[0] as string;
    refusals?.log({ route: path, method: req.method ?? '', status, errorCode: code, reason, ...(bodyComplete === undefined ? {} : { bodyComplete }) });
  };

  return {
    record,
    get connections() {
      return connections;
    },
    get streams() {
      return streams;
    },
    trackConnection(socket) {
      if (limits.maxConnections > 0 && connections >= limits.maxConnections) overCap.add(socket);
      connections++;
      socket.once('close', () => connections--);
    },
    checkConnection(req) {
      if (!overCap.has(req.socket)) return undefined;
      return new AdmissionError('ERR_TIDEGATE_OVER_CAPACITY', `the gateway holds its ${limits.maxConnections} connections; retry later`, 503, 'connections', retryAfter);
    },
    checkStream(req) {
      const over = overStreams();
      if (over !== undefined || !(limits.maxStreamsPerClient > 0)) return over;
      return overClient(clientKeyOf(req, limits.clientAddressHeader));
    },
    admitStream(req) {
      const over = overStreams();
      if (over !== undefined) return over;
      // Without a per-client limit no client is keyed: its peer address costs a getpeername()
      // syscall, a credential a SHA-256.
      if (!(limits.maxStreamsPerClient > 0)) {
        streams++;
        let released = false;
        return () => {
          if (released) return;
          released = true;
          streams--;
        };
      }
      const key = clientKeyOf(req, limits.clientAddressHeader);
      const overKey = overClient(key);
      if (overKey !== undefined) return overKey;
      const held = perClient.get(key) ?? 0;
      streams++;
      perClient.set(key, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        streams--;
        const left = (perClient.get(key) ?? 1) - 1;
        if (left > 0) perClient.set(key, left);
        else perClient.delete(key);
      };
    },
    refuse(req, res, adapter, error) {
      record(req, res.headersSent ? 499 : error.status, error);
      if (res.headersSent) {
        req.socket.destroy();
        return;
      }
      if (!REQUEST_REASONS.has(error.reason) || hasUnreadBody(req)) {
        res.setHeader('Connection', 'close');
        closeAfterResponse(req, res);
      }
      if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
      adapter.sendHttpError(res, error);
    },
    flushLog() {
      refusals?.flush();
    },
  };
}

/**
 * Closes the request's connection once `res` is flushed, as nginx's lingering close does: FIN
 * after the answer, then what the client still sends is discarded (never buffered) until it
 * closes, for at most {@link CLOSE_LINGER_MS} and {@link CLOSE_LINGER_BYTES}, then the socket is
 * destroyed. Node's own close after `Connection: close` (`destroySoon()`) would send a RST while
 * body bytes are unread, and a client still uploading could lose the answer to it.
 */
export function closeAfterResponse(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  let lingering = false;
  const linger = (): void => {
    if (lingering || socket.destroyed) return;
    lingering = true;
    socket.end();
    req.removeAllListeners('data');
    req.resume();
    const from = socket.bytesRead;
    const until = Date.now() + CLOSE_LINGER_MS;
    const timer = setInterval(() => {
      if (Date.now() >= until || socket.bytesRead - from > CLOSE_LINGER_BYTES) socket.destroy();
    }, 25);
    socket.once('close', () => clearInterval(timer));
  };
  onServerClose(socket, linger);
  res.once('finish', linger);
}

/** The request declares a body (`Transfer-Encoding` or a non-zero `Content-Length`) not yet read to its end. */
export function hasUnreadBody(req: IncomingMessage): boolean {
  if (req.complete) return false;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * The key a client's streams are counted under:
 * - `key:<sha256 of the credential, 16 hex>` when it sends one ({@link credentialOf}: a Bearer
 *   token, `x-api-key`, another `Authorization`; the credential itself is never kept or logged);
 * - else `addr:<address>`: the right-most entry of `clientAddressHeader` when that is configured
 *   and holds an IP address (the entry the closest proxy appended), else the socket's peer.
 */
export function clientKeyOf(req: IncomingMessage, clientAddressHeader?: string | undefined): string {
  const credential = credentialOf(req.headers);
  if (credential !== undefined) return `key:${createHash('sha256').update(credential).digest('hex').slice(0, 16)}`;
  return `addr:${clientAddressOf(req, clientAddressHeader)}`;
}

/** The client's address: see {@link clientKeyOf}. */
export function clientAddressOf(req: IncomingMessage, clientAddressHeader?: string | undefined): string {
  if (clientAddressHeader !== undefined) {
    const raw = req.headers[clientAddressHeader];
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    const last = value?.split(',').pop()?.trim();
    if (last !== undefined && isIP(last) !== 0) return last;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
