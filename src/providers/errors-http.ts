import { ShutdownError, TimeoutError } from '../errors';
import { UpstreamHttpError, UpstreamRedirectError, UpstreamResetError, type UpstreamStreamError } from '../http/errors';
import { parseObject } from './wire';

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

/**
 * The error a provider's error frame or error JSON reports for `error`. An upstream HTTP error
 * ({@link UpstreamHttpError}, its body bounded when it was read) whose body is the provider's
 * error JSON becomes the {@link UpstreamStreamError} `read` finds in it (the reading the
 * adapter's decoder gives an error frame), so the client's SDK raises the upstream's own
 * message, type and code, as it would from the HTTP answer. Any other error, and a body that
 * is not that JSON (`read` answers `undefined`), is returned as is.
 */
export function upstreamErrorOf(error: unknown, read: (json: Record<string, unknown>, text: string) => UpstreamStreamError | undefined): unknown {
  if (!(error instanceof UpstreamHttpError)) return error;
  const json = parseObject(error.body);
  return (json === undefined ? undefined : read(json, error.body)) ?? error;
}

/**
 * The upstream's own error JSON, as text, when `error` is an upstream HTTP error
 * ({@link UpstreamHttpError}) whose body is an object `isProviderError` accepts; else
 * `undefined`. An error frame relays it whole, so what the adapter does not model (Anthropic's
 * `request_id`, fields of its `error` object) still reaches the client's SDK. The text is the
 * body as received (after the gateway's redaction), a complete JSON object.
 */
export function upstreamErrorText(error: unknown, isProviderError: (json: Record<string, unknown>) => boolean): string | undefined {
  if (!(error instanceof UpstreamHttpError)) return undefined;
  const json = parseObject(error.body);
  return json !== undefined && isProviderError(json) ? error.body : undefined;
}

export { codeOf, messageOf, writeJsonError } from '../express/error-shapes';
