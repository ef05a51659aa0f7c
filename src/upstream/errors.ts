import { TidegateError } from '../errors';

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
  ) {
    super('ERR_TIDEGATE_UPSTREAM_STATUS', `upstream answered HTTP ${status}`);
  }
}

/** The upstream connection failed or was reset (`ERR_TIDEGATE_UPSTREAM_RESET`). */
export class UpstreamResetError extends TidegateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_TIDEGATE_UPSTREAM_RESET', message, options);
  }
}

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
 * `event: error`) (`ERR_TIDEGATE_UPSTREAM_ERROR`). `message`, `type` and `providerCode` are the
 * provider's own, so the client's SDK can raise them unchanged.
 */
export class UpstreamStreamError extends TidegateError {
  constructor(
    message: string,
    /** The provider's error type, e.g. `server_error`, `overloaded_error`. */
    readonly type: string,
    /** The provider's error code (OpenAI `code`), `null` when it sent none. */
    readonly providerCode: string | number | null = null,
  ) {
    super('ERR_TIDEGATE_UPSTREAM_ERROR', message);
  }
}
