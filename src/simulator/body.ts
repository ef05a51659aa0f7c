/**
 * Reading an API request's body: collecting it up to `maxBodyBytes` (more is a 413) and
 * parsing it as one JSON object (anything else is a 400), both as {@link RequestError}.
 */
import type * as http from 'node:http';
import { readBounded } from '../http/read-bounded';
import { RequestError } from './request-error';

/**
 * Collects the request body. Rejects with a 413 {@link RequestError} once it exceeds
 * `maxBytes` (the rest is drained), or with the stream's error. A client that leaves mid-body
 * resolves what arrived; the response's 'close' reports the abort.
 */
export function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return readBounded(req, {
    maxBytes,
    tooLarge: () => {
      req.resume();
      return new RequestError(413, `request body exceeds ${maxBytes} bytes`);
    },
  });
}

/** Parses `raw` (UTF-8) as a JSON object. Throws a 400 {@link RequestError} otherwise. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new RequestError(400, 'request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RequestError(400, 'request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
