import type { ServerResponse } from 'node:http';
import { ShutdownError, TidegateError, TimeoutError } from '../../errors';
import { UpstreamHttpError, UpstreamResetError } from '../errors';

/**
 * The HTTP status for an error answered before the stream started: the error's own `status`
 * (an upstream HTTP error keeps the upstream's), 504 for a timeout, 502 for a broken upstream,
 * 503 while shutting down, else 500.
 */
export function httpStatusOf(error: unknown): number {
  if (error instanceof UpstreamHttpError) return error.status;
  if (error instanceof TimeoutError) return 504;
  if (error instanceof UpstreamResetError) return 502;
  if (error instanceof ShutdownError) return 503;
  const status = (error as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

/** `code` of a tidegate error, `ERR_TIDEGATE_INTERNAL` for anything else. */
export function codeOf(error: unknown): string {
  if (error instanceof TidegateError) return error.code;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'ERR_TIDEGATE_INTERNAL';
}

/** The message of any thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Writes a JSON error response (used before headers were sent). */
export function writeJsonError(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}
