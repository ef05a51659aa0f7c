/**
 * Reading an API request's body: collecting it up to `maxBodyBytes` (more is a 413) and
 * parsing it as one JSON object (anything else is a 400), both as {@link RequestError}.
 */
import type * as http from 'node:http';
import { RequestError } from './request-error';

/**
 * Collects the request body. Rejects with a 413 {@link RequestError} once it exceeds
 * `maxBytes` (the rest is drained), or with the stream's error. A client that leaves mid-body
 * resolves what arrived; the response's 'close' reports the abort.
 */
export function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onEnd);
    };
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > maxBytes) {
        cleanup();
        req.resume();
        reject(new RequestError(413, `request body exceeds ${maxBytes} bytes`));
        return;
      }
      parts.push(c);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(parts));
    };
    const onError = (e: Error): void => {
      cleanup();
      reject(e);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    // 'close' without 'end': the client left mid-body; the response's 'close' reports it.
    req.on('close', onEnd);
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
