/**
 * Typed errors with stable `code` strings. Users and the wire `event: error` body switch on
 * `code`, never on the message text.
 */

/** Every error tidegate signals. `code` is stable across versions. */
export class TidegateError extends Error {
  /** A stable machine-readable code, e.g. `ERR_TIDEGATE_OVERFLOW`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /** The JSON shape written in an `event: error` frame: `{ code, message }`. */
  toJSON(): { code: string; message: string } {
    return { code: this.code, message: this.message };
  }
}

/**
 * A byte or element budget was exceeded (`ERR_TIDEGATE_OVERFLOW`). Mirrors Reactor's
 * `Exceptions.failWithOverflow` from `onBackpressureBuffer`. Answered before the stream started,
 * it is HTTP 503 (`status`): the server could not hold the response, not the client's fault.
 */
export class BufferOverflowError extends TidegateError {
  /** HTTP status when it ends a response before its headers. */
  readonly status = 503;

  constructor(message = 'buffer overflow: the consumer is slower than the producer and the budget is spent') {
    super('ERR_TIDEGATE_OVERFLOW', message);
  }
}

/** Which deadline a {@link TimeoutError} reports. */
export type TimeoutKind = 'connect' | 'first' | 'idle' | 'total';

/** A deadline passed (`ERR_TIDEGATE_TIMEOUT`); `kind` names which one, `timeoutMs` its length in ms. */
export class TimeoutError extends TidegateError {
  constructor(
    readonly kind: TimeoutKind,
    readonly timeoutMs: number,
    message = `${kind} timeout after ${timeoutMs} ms`,
  ) {
    super('ERR_TIDEGATE_TIMEOUT', message);
  }
}

/** A line or an event in an SSE stream exceeded its byte limit (`ERR_TIDEGATE_SSE_LIMIT`). */
export class SseLimitError extends TidegateError {
  constructor(
    readonly limit: 'line' | 'event',
    readonly maxBytes: number,
  ) {
    super('ERR_TIDEGATE_SSE_LIMIT', `SSE ${limit} exceeds ${maxBytes} bytes`);
  }
}

/** A client socket accepted no bytes for `stallTimeoutMs` (`ERR_TIDEGATE_STALLED`). */
export class StalledError extends TidegateError {
  constructor(readonly stallTimeoutMs: number) {
    super('ERR_TIDEGATE_STALLED', `client did not read for ${stallTimeoutMs} ms`);
  }
}

/** The gateway is shutting down and the stream passed its grace deadline (`ERR_TIDEGATE_SHUTDOWN`). */
export class ShutdownError extends TidegateError {
  constructor(message = 'gateway is shutting down') {
    super('ERR_TIDEGATE_SHUTDOWN', message);
  }
}

/**
 * An SSE endpoint answered with something that is not a usable event stream
 * (`ERR_TIDEGATE_SSE_HTTP`): a status the client does not retry (4xx except 429), a 2xx with a
 * content type other than `text/event-stream`, or a retried status (429, 5xx) once attempts ran
 * out. `body` is the response text (capped by the client), `retryAfterMs` the parsed `Retry-After`,
 * `allow` a 405's `Allow` as received.
 */
export class SseHttpError extends TidegateError {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType: string | undefined,
    readonly retryAfterMs?: number,
    readonly allow?: string,
  ) {
    super('ERR_TIDEGATE_SSE_HTTP', `SSE endpoint answered HTTP ${status} (${contentType ?? 'no content type'})`);
  }
}

/**
 * An SSE connection failed, stalled or ended before a terminal event, and was not (or no longer)
 * reconnected (`ERR_TIDEGATE_SSE_CONNECTION`). `attempts` counts the failed attempts in a row;
 * `cause` holds the underlying network error.
 */
export class SseConnectionError extends TidegateError {
  constructor(
    message: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super('ERR_TIDEGATE_SSE_CONNECTION', message, options);
  }
}

/**
 * A response's body is not a readable stream (`ERR_TIDEGATE_SSE_BODY`): neither a Node `Readable`
 * nor a WHATWG `ReadableStream` (a `fetch` passed to `connectSse` that answers with a string, an
 * object or no body at all). Not retried: the same fetch would answer the same way.
 */
export class SseBodyError extends TidegateError {
  constructor(readonly bodyType: string) {
    super('ERR_TIDEGATE_SSE_BODY', `SSE response body is ${bodyType}, not a readable stream`);
  }
}
