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
