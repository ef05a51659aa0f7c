import { ShutdownError, TimeoutError } from '../errors';
import { UpstreamHttpError, UpstreamRedirectError, UpstreamResetError } from '../http/errors';

/**
 * The HTTP status for an error answered before the stream started: the error's own `status`
 * (an upstream HTTP error keeps the upstream's), 504 for a timeout, 502 for a broken or redirecting upstream,
 * 503 while shutting down, else 500.
 */
export function httpStatusOf(error: unknown): number {
  if (error instanceof UpstreamHttpError) return error.status;
  if (error instanceof TimeoutError) return 504;
  if (error instanceof UpstreamResetError || error instanceof UpstreamRedirectError) return 502;
  if (error instanceof ShutdownError) return 503;
  const status = (error as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

export { codeOf, messageOf, writeJsonError } from '../express/error-shapes';
