import { BufferOverflowError, ShutdownError, SseLimitError, StalledError, TidegateError, TimeoutError } from '../../errors';
import type { StreamResult } from '../../express/send-flow';
import { UpstreamHttpError, UpstreamRedirectError, UpstreamResetError, UpstreamStreamError, UpstreamTruncatedError, UpstreamUnreachableError } from '../../http/errors';
import { codeOf } from '../../express/error-shapes';

/** How a relayed request ended, as logged (`outcome`) and counted (`tidegate_streams_total`). */
export type RelayOutcome =
  | 'completed'
  | 'upstream_reset'
  | 'upstream_unreachable'
  | 'overflow'
  | 'stalled'
  | 'client_closed'
  | 'timeout'
  | 'upstream_error'
  | 'upstream_redirect'
  | 'bad_request'
  | 'shutdown';

/** A client left before the headers were sent; the reason the upstream request is aborted with. */
export class ClientClosedError extends TidegateError {
  constructor() {
    super('ERR_TIDEGATE_CLIENT_CLOSED', 'client closed the connection');
  }
}

/** The `outcome` label of one failed upstream attempt (`tidegate_upstream_requests_total`). */
export function upstreamOutcome(err: unknown): string {
  if (err instanceof UpstreamHttpError) return `http_${err.status}`;
  if (err instanceof UpstreamRedirectError) return 'redirect';
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof UpstreamUnreachableError) return 'unreachable';
  if (err instanceof UpstreamResetError) return 'reset';
  if (err instanceof ClientClosedError || err instanceof ShutdownError) return 'aborted';
  return 'error';
}

/** The outcome of a stream ended by `err` (before or after headers). */
export function errorOutcome(err: unknown): RelayOutcome {
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof ShutdownError) return 'shutdown';
  if (err instanceof BufferOverflowError || codeOf(err) === 'ERR_TIDEGATE_OVERFLOW') return 'overflow';
  if (err instanceof UpstreamUnreachableError) return 'upstream_unreachable';
  if (err instanceof UpstreamRedirectError) return 'upstream_redirect';
  if (err instanceof UpstreamResetError || err instanceof UpstreamTruncatedError) return 'upstream_reset';
  if (err instanceof UpstreamStreamError || err instanceof UpstreamHttpError || err instanceof SseLimitError) return 'upstream_error';
  if (err instanceof ClientClosedError) return 'client_closed';
  if (err instanceof StalledError) return 'stalled';
  // The gateway could not build the upstream request from the client's (the upstream was not asked).
  if (codeOf(err) === 'ERR_TIDEGATE_BAD_REQUEST') return 'bad_request';
  return 'upstream_error';
}

/** The outcome of a stream the bridge carried to its end. */
export function streamOutcome(result: StreamResult): RelayOutcome {
  switch (result.outcome) {
    case 'completed':
    case 'overflow':
    case 'stalled':
    case 'client_closed':
      return result.outcome;
    default:
      return errorOutcome(result.error);
  }
}

/** The network error code (`ECONNREFUSED`, `ENOTFOUND` …) behind an upstream failure, for the log line. */
export function errnoOf(err: unknown): string | undefined {
  return err instanceof UpstreamResetError ? err.errno : undefined;
}
