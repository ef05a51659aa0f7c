// Public exports of src/upstream (re-exports only).
export {
  DEFAULT_MAX_BODY_BYTES,
  MAX_ERROR_BODY_BYTES,
  UpstreamBodyTooLargeError,
  UpstreamEncodingError,
  UpstreamHttpError,
  UpstreamNotStreamError,
  UpstreamRedirectError,
  UpstreamResetError,
  UpstreamUnreachableError,
  UpstreamUpgradeError,
  UNREACHABLE_ERRNOS,
  UpstreamStreamError,
  UpstreamTruncatedError,
} from './errors';
export { redactUrl, Scrubber } from './redact';
export {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FIRST_BYTE_TIMEOUT_MS,
  fetchUpstream,
  openUpstreamStream,
  retryAfterMs,
  upstreamAgent,
} from './request';
export type { UpstreamBody, UpstreamRequest, UpstreamStream } from './request';
export type { AbortSignalLike } from './abort-signal-like';
export { retryDelayMs, withRetries } from './retry';
export type { RetryNotice, RetryPolicy } from './retry';
export * from '../providers';
