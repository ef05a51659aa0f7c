import type { ServerResponse } from 'node:http';
import { TidegateError } from '../errors';
import type { SseEventInit } from '../sse';

/** `code` of a tidegate error (or of any error with a string `code`), `ERR_TIDEGATE_INTERNAL` for anything else. */
export function codeOf(error: unknown): string {
  if (error instanceof TidegateError) return error.code;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'ERR_TIDEGATE_INTERNAL';
}

/** The message of any thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The JSON body of an error: `{ code, message }`, with `ERR_TIDEGATE_INTERNAL` for foreign errors. */
export function errorBody(error: unknown): { code: string; message: string } {
  return { code: codeOf(error), message: messageOf(error) };
}

/** The default error written after headers: `event: error` with `data: {"code","message"}`. */
export function formatError(error: unknown): SseEventInit {
  return { event: 'error', data: JSON.stringify(errorBody(error)) };
}

/** Writes a JSON error response (before headers were sent). */
export function writeJsonError(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  // Set here, not by end(): Node leaves it out of a HEAD answer, which carries the GET's headers.
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** The default error before headers: status from `error.status` (or 500) and `{error:{code,message}}`. */
export function sendHttpError(res: ServerResponse, error: unknown): void {
  const status = (error as { status?: unknown } | undefined)?.status;
  writeJsonError(res, typeof status === 'number' && status >= 400 && status < 600 ? status : 500, { error: errorBody(error) });
}
