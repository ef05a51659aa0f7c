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
 * `Exceptions.failWithOverflow` from `onBackpressureBuffer`.
 */
export class BufferOverflowError extends TidegateError {
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
