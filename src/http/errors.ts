import { TidegateError } from '../errors';
import { isMediaType } from './media-type';

/**
 * How an error names the upstream: `upstream for route /v1/chat/completions`, or `upstream`
 * when no route is known; never its URL, whose host, userinfo or query a client must not see.
 */
export function upstreamOf(route: string | undefined): string {
  return route ? `upstream for route ${route}` : 'upstream';
}

/**
 * The upstream answered with an HTTP error before streaming (`ERR_TIDEGATE_UPSTREAM_STATUS`).
 * `status` and the upstream's `body` text are passed through to the client as an HTTP error.
 */
export class UpstreamHttpError extends TidegateError {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType: string | undefined,
    readonly retryAfterMs?: number,
    /** A 405's `Allow` (RFC 9110 §15.5.6: a 405 carries one), relayed with it; else undefined. */
    readonly allow?: string,
  ) {
    super('ERR_TIDEGATE_UPSTREAM_STATUS', `upstream answered HTTP ${status}`);
  }
}

/**
 * Why a 3xx answer was not followed: the route does not follow redirects (`not-followed`), the
 * upstream redirected more times than a call follows (`too-many`, a loop), it pointed off the
 * upstream's origin (`other-origin`), or the 3xx is not a redirect a call can follow
 * (`unfollowable`: 300, 304, 305, 306, any other 3xx, or a 301–308 without a `Location`).
 */
export type RedirectRefusal = 'not-followed' | 'too-many' | 'other-origin' | 'unfollowable';

/**
 * The upstream answered a 3xx the call does not follow (`ERR_TIDEGATE_UPSTREAM_REDIRECT`, HTTP
 * 502 to the client, never retried): a redirect would send the request body (and, to the same
 * host, the upstream key) to an address nobody configured, and any other 3xx (300, 304, 305) is
 * no answer to a model request either, so no 3xx reaches a client as it came. `upstreamStatus`
 * is the last 3xx, `reason` says why it was not followed; neither the `Location` nor the body is
 * kept, so no upstream address reaches a client or a log.
 */
export class UpstreamRedirectError extends TidegateError {
  constructor(
    readonly upstreamStatus: number,
    route?: string | undefined,
    readonly reason: RedirectRefusal = 'not-followed',
  ) {
    const upstream = upstreamOf(route);
    super(
      'ERR_TIDEGATE_UPSTREAM_REDIRECT',
      reason === 'too-many'
        ? `${upstream} kept redirecting (HTTP ${upstreamStatus} after ${MAX_REDIRECTS} redirects, a loop?): configure the address it ends at`
        : reason === 'other-origin'
          ? `${upstream} answered HTTP ${upstreamStatus} (a redirect) to another origin; redirects are followed on the upstream's own origin only: configure the address it points to`
          : reason === 'unfollowable'
            ? `${upstream} answered HTTP ${upstreamStatus}, a 3xx with no redirect to follow: check the route's upstream address`
            : `${upstream} answered HTTP ${upstreamStatus} (a redirect); redirects are not followed: configure the address it points to`,
    );
  }
}

/** Most redirects one upstream call follows (node-fetch's default `follow`); the next one ends it with {@link UpstreamRedirectError}. */
export const MAX_REDIRECTS = 20;

/**
 * The upstream connection failed or was reset (`ERR_TIDEGATE_UPSTREAM_RESET`). `status` is the
 * HTTP status the upstream had answered before the connection broke, `undefined` when it broke
 * before the status line (only then, and unless it `answered`, may the call be retried: see
 * `retryDelayMs`). The message
 * names the route and the failure (`ECONNREFUSED`), never the upstream URL; `cause` keeps the
 * network error for logs.
 */
export class UpstreamResetError extends TidegateError {
  /** The upstream's status line before the break, `undefined` when none arrived. */
  readonly status: number | undefined;
  /** The network error's code (`ECONNRESET`, `ECONNREFUSED` …), when it had one: logged as `errno`. */
  readonly errno: string | undefined;
  /**
   * The upstream answered, but Node's HTTP parser refused the answer (`HPE_*` errno, e.g. headers
   * over `maxHeaderSize`): it may be billed upstream, so it is never retried, status line or not.
   */
  readonly answered: boolean;

  constructor(message: string, options?: { cause?: unknown; status?: number | undefined; errno?: string | undefined; answered?: boolean | undefined }, code = 'ERR_TIDEGATE_UPSTREAM_RESET') {
    super(code, message, options);
    this.status = options?.status;
    this.errno = options?.errno;
    this.answered = options?.answered === true || options?.status !== undefined;
  }
}

/** Network error codes that mean no connection to the upstream was made: refused, unresolvable, unreachable. */
export const UNREACHABLE_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
]);

/**
 * No connection to the upstream could be made (`ERR_TIDEGATE_UPSTREAM_UNREACHABLE`, HTTP 502
 * to the client): refused, a name that does not resolve, no route to the host (see
 * {@link UNREACHABLE_ERRNOS}). A connection that was made and then broke is
 * {@link UpstreamResetError}, of which this is a kind: it is retried the same way.
 */
export class UpstreamUnreachableError extends UpstreamResetError {
  constructor(message: string, options: { cause?: unknown; errno: string }) {
    super(message, options, 'ERR_TIDEGATE_UPSTREAM_UNREACHABLE');
  }
}

/**
 * The typed error for a network or parser error of an upstream call: unreachable (before the
 * status line, {@link UNREACHABLE_ERRNOS}), an answer the HTTP parser refused (`HPE_*`: the
 * upstream answered, so never retried), or a reset, carrying the answered `status` if any (a
 * compressed body that does not decode, zlib's `Z_*` codes, is said to be one). The message names
 * the route before the status line and never the URL; `cause` keeps `err`.
 */
export function networkError(err: unknown, status: number | undefined, route: string | undefined): UpstreamResetError {
  const e = err as { code?: unknown; errno?: unknown } | undefined;
  const code = typeof e?.code === 'string' && e.code !== 'FETCH_ERROR' ? e.code : typeof e?.errno === 'string' ? e.errno : 'connection error';
  // Before the status line the route says which upstream; a break mid-body reads the same on every route.
  const upstream = upstreamOf(route);
  const errno = code === 'connection error' ? undefined : code;
  if (status === undefined && errno !== undefined && UNREACHABLE_ERRNOS.has(errno)) return new UpstreamUnreachableError(`${upstream} unreachable (${code})`, { cause: err, errno });
  const answered = errno?.startsWith('HPE_') === true;
  const failed = answered ? 'answered with a response that could not be parsed' : 'connection failed';
  // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR): the connection held, the compressed body did not.
  const undecodable = errno !== undefined && /^Z_[A-Z_]+$/.test(errno);
  const broke = undecodable ? `upstream body after HTTP ${status} could not be decoded` : `upstream connection broke after HTTP ${status}`;
  const message = status === undefined ? `${upstream} ${failed} (${code})` : `${broke} (${code})`;
  return new UpstreamResetError(message, { cause: err, status, errno, answered });
}

/**
 * The upstream switched protocols (`101 Switching Protocols` with an `Upgrade`): its connection
 * is no HTTP answer any more, so there is nothing to relay or read. A kind of
 * {@link UpstreamResetError} (`ERR_TIDEGATE_UPSTREAM_RESET`, HTTP 502 to the client) that counts
 * as `answered`: the gateway never retries it, and `connectSse` fails at once (WHATWG HTML
 * §9.2.3: a status other than 200 fails the connection). The message names the route, never
 * the URL.
 */
export class UpstreamUpgradeError extends UpstreamResetError {
  constructor(status: number | undefined, route: string | undefined) {
    super(`${upstreamOf(route)} switched protocols (HTTP ${status ?? 101}) instead of answering`, { status: status ?? 101, answered: true });
  }
}

/**
 * An upstream body was larger than the gateway reads (`ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE`,
 * HTTP 502 to the client): a non-stream answer over `upstream.maxBodyBytes`, or an error body
 * over {@link MAX_ERROR_BODY_BYTES}. The upstream request was aborted (its socket destroyed) as
 * soon as the count passed `maxBytes`; nothing of the body reaches the client.
 */
export class UpstreamBodyTooLargeError extends TidegateError {
  /** HTTP status when it ends a response before its headers. */
  readonly status = 502;

  constructor(
    /** The status the upstream answered with (a 429 or 5xx stays retryable, see `retryDelayMs`). */
    readonly upstreamStatus: number,
    /** The limit that was passed, bytes. */
    readonly maxBytes: number,
    route = '',
  ) {
    super('ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE', `${upstreamOf(route)} answered HTTP ${upstreamStatus} with a body over ${maxBytes} bytes`);
  }
}

/**
 * A streaming request was answered 2xx with a body that is not `text/event-stream`, or, on a
 * resumable route, a 2xx other than 200 (`ERR_TIDEGATE_UPSTREAM_NOT_STREAM`, HTTP 502 to the client). The body is not read: the
 * upstream request is aborted at once, and never retried (the upstream did answer). The message
 * reaches the client, so it names no upstream text: it says whether the upstream sent no content
 * type, JSON or another one; `contentType` keeps the value.
 */
export class UpstreamNotStreamError extends TidegateError {
  /** HTTP status when it ends a response before its headers. */
  readonly status = 502;

  constructor(
    readonly upstreamStatus: number,
    /** The upstream's `Content-Type` as it sent it (for the caller, not for clients), `undefined` when it sent none. */
    readonly contentType: string | undefined,
    route = '',
  ) {
    const upstream = upstreamOf(route);
    const sent = contentType === undefined || contentType === '' ? 'no content type' : isMediaType(contentType, 'application/json') ? 'application/json' : 'another content type';
    super(
      'ERR_TIDEGATE_UPSTREAM_NOT_STREAM',
      // Only a resumable stream (connectSse, WHATWG §9.2.3) refuses an event stream: one not answered 200.
      isMediaType(contentType, 'text/event-stream')
        ? `${upstream} answered HTTP ${upstreamStatus} with text/event-stream; a resumable stream opens on a 200 only`
        : `${upstream} answered HTTP ${upstreamStatus} with ${sent}, not text/event-stream`,
    );
  }
}

/**
 * A 2xx answer's body is in a content coding the gateway does not decode
 * (`ERR_TIDEGATE_UPSTREAM_ENCODING`, HTTP 502 to the client): the upstream was asked for
 * `identity`, and only one of gzip or deflate (any case) is decoded; another coding
 * (`zstd`, `compress`, an unknown token; `br`, whose decoder's window of up to 16 MiB would sit
 * outside the stream's budget) or a stack of several (`gzip, deflate`) would otherwise be read
 * as identity. The body is not read: the upstream request is aborted at once, and never
 * retried (the upstream did answer). The message reaches the client, so it names registered
 * codings only (lower case; any other makes it an unregistered `Content-Encoding`);
 * `contentEncoding` keeps the header as it came. A transfer coding other than `chunked`, which
 * Node's parser leaves on the body, is refused alike, the message naming `Transfer-Encoding`.
 */
export class UpstreamEncodingError extends TidegateError {
  /** HTTP status when it ends a response before its headers. */
  readonly status = 502;

  constructor(
    readonly upstreamStatus: number,
    /** The upstream's `Content-Encoding` (or `Transfer-Encoding`) as it sent it (for the caller, not for clients). */
    readonly contentEncoding: string,
    /** The codings it lists, lower case, `identity` and empty elements left out. */
    codings: readonly string[],
    route = '',
    /** The header that named them: a transfer coding other than `chunked` is refused alike. */
    header: 'Content-Encoding' | 'Transfer-Encoding' = 'Content-Encoding',
  ) {
    const listed = codings.join(', ');
    const named = !codings.every((c) => REGISTERED_CODINGS.has(c))
      ? `an unregistered ${header}`
      : listed.length > 64
        ? `a ${header} of ${codings.length} codings`
        : `${header} ${listed}`;
    // The gateway asks for `Accept-Encoding: identity`; it asks nothing of the transfer codings.
    const asked = header === 'Content-Encoding' ? ' (it asked for identity)' : '';
    super('ERR_TIDEGATE_UPSTREAM_ENCODING', `${upstreamOf(route)} answered HTTP ${upstreamStatus} with ${named}, which the gateway does not decode${asked}`);
  }
}

/** The IANA HTTP Content Coding Registry's codings, and node-fetch's `x-deflate`: the ones an error message may name. */
const REGISTERED_CODINGS: ReadonlySet<string> = new Set(['aes128gcm', 'br', 'compress', 'dcb', 'dcz', 'deflate', 'exi', 'gzip', 'pack200-gzip', 'x-compress', 'x-deflate', 'x-gzip', 'zstd']);

/** Most bytes of an upstream error body the gateway reads and relays (64 KiB); a longer one is {@link UpstreamBodyTooLargeError}. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Default most bytes of a non-stream upstream answer (8 MiB, `upstream.maxBodyBytes`). */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * The upstream closed its event stream without the provider's terminator (OpenAI
 * `data: [DONE]`, Anthropic `message_stop`): the answer may be cut short
 * (`ERR_TIDEGATE_UPSTREAM_TRUNCATED`).
 */
export class UpstreamTruncatedError extends TidegateError {
  constructor(message = 'upstream closed the stream before its terminator') {
    super('ERR_TIDEGATE_UPSTREAM_TRUNCATED', message);
  }
}

/**
 * The upstream sent an error frame inside a 200 stream (OpenAI `data: {"error":{…}}`, Anthropic
 * `event: error`) (`ERR_TIDEGATE_UPSTREAM_ERROR`). `message`, `type`, `providerCode` and `param`
 * are the provider's own, so the client's SDK can raise them unchanged. An adapter also reads
 * one from an {@link UpstreamHttpError}'s body in the provider's error JSON when it writes that
 * error as a frame (see `upstreamErrorOf`).
 */
export class UpstreamStreamError extends TidegateError {
  constructor(
    message: string,
    /** The provider's error type, e.g. `server_error`, `overloaded_error`. */
    readonly type: string,
    /** The provider's error code (OpenAI `code`), `null` when it sent none. */
    readonly providerCode: string | number | null = null,
    /** The request parameter the error is about (OpenAI `param`), `null` when it named none. */
    readonly param: string | null = null,
  ) {
    super('ERR_TIDEGATE_UPSTREAM_ERROR', message);
  }
}
