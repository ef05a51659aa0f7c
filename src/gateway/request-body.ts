import type { IncomingMessage } from 'node:http';
import { readBounded } from '../http/read-bounded';
import { AdmissionError, badRequestError } from './admission';
import { MAX_JSON_DEPTH, scanJsonBounds, type JsonCounts } from './json-bounds';

/** Bounds of {@link readRequestBody}. */
export interface RequestBodyLimits {
  /** Largest body accepted, bytes. */
  maxBytes: number;
  /** The whole body must arrive within this of the call, ms (0 disables). */
  timeoutMs: number;
  /** Called once the body passed the checks on its headers, before it is read (sends a deferred `100 Continue`). */
  onRead?: (() => void) | undefined;
}

/** The client went away before its body was complete: there is no one to answer. */
export class RequestBodyAbortedError extends Error {
  readonly code = 'ERR_TIDEGATE_CLIENT_CLOSED';
}

/**
 * Reads a request body into one Buffer, refusing it as soon as it is known to be too big or too
 * slow, without reading the rest:
 *
 * - `Content-Length` over `maxBytes`: rejects at once with 413 `ERR_TIDEGATE_BODY_TOO_LARGE`;
 * - bytes read passing `maxBytes` (a chunked or lying body): stops reading, rejects with 413;
 * - not all of it within `timeoutMs`: stops reading, rejects with 408 `ERR_TIDEGATE_BODY_TIMEOUT`;
 * - `Content-Encoding` other than `identity`: rejects at once with 415 `ERR_TIDEGATE_BODY_ENCODING`
 *   (an inflated body would escape `maxBytes`);
 * - the client closing first (its connection as well: Node emits no `'close'` on a request
 *   answered before its body ended): rejects with {@link RequestBodyAbortedError}, timers cleared.
 *
 * Resolves `undefined` when the request has no body (no `Transfer-Encoding`, no or zero
 * `Content-Length`). On a rejection the request is paused and its listeners removed: whoever
 * answers should close the connection (`admission.refuse()` does).
 *
 * Demand: reads the socket at its own pace until `maxBytes` or the end. Discard: on a rejection,
 * the chunks read so far are dropped; unread bytes stay in the kernel until the socket closes.
 */
export function readRequestBody(req: IncomingMessage, limits: RequestBodyLimits): Promise<Buffer | undefined> {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
    return Promise.reject(new AdmissionError('ERR_TIDEGATE_BODY_ENCODING', `request bodies are read as sent; Content-Encoding ${encoding} is not accepted`, 415, 'body_encoding'));
  }
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (declared !== undefined && declared > limits.maxBytes) return Promise.reject(tooLarge(limits.maxBytes));
  if (req.headers['transfer-encoding'] === undefined && (declared === undefined || declared === 0)) return Promise.resolve(undefined);
  limits.onRead?.();

  const stop = (error: Error): Error => {
    req.pause();
    return error;
  };
  return readBounded(req, {
    maxBytes: limits.maxBytes,
    tooLarge: (maxBytes) => stop(tooLarge(maxBytes)),
    timeoutMs: limits.timeoutMs,
    timedOut: (timeoutMs) => stop(new AdmissionError('ERR_TIDEGATE_BODY_TIMEOUT', `the request body did not arrive within ${timeoutMs} ms`, 408, 'body_timeout')),
    closedEarly: () => stop(new RequestBodyAbortedError('the client closed the connection before its request body was complete')),
    closeWith: req.socket,
  }).then((body) => (body.length === 0 ? undefined : body));
}

/**
 * Parses a JSON request body read by {@link readRequestBody}, once a linear scan found it
 * within the bounds ({@link scanJsonBounds}), so that `JSON.parse` never builds what the
 * gateway would refuse:
 *
 * - nested deeper than {@link MAX_JSON_DEPTH} levels: rejects with 400 `ERR_TIDEGATE_BODY_TOO_DEEP`;
 * - more than `maxValues` objects, arrays and strings (keys included): rejects with 413
 *   `ERR_TIDEGATE_BODY_TOO_MANY_VALUES` (0 = no cap);
 * - not JSON: rejects with 400 `ERR_TIDEGATE_BAD_REQUEST` (reason `bad_request`).
 *
 * @param maxValues `limits.maxRequestBodyValues`.
 * @throws AdmissionError
 */
export function parseJsonBody(bytes: Buffer, maxValues: number): unknown {
  const counts: JsonCounts = { topLevelKeys: -1 };
  const exceeded = scanJsonBounds(bytes, { maxDepth: MAX_JSON_DEPTH, maxValues }, counts);
  if (exceeded?.bound === 'depth') {
    throw new AdmissionError('ERR_TIDEGATE_BODY_TOO_DEEP', `the request body nests objects and arrays deeper than ${exceeded.limit} levels (at byte ${exceeded.offset})`, 400, 'body_too_deep');
  }
  if (exceeded?.bound === 'values') {
    throw new AdmissionError('ERR_TIDEGATE_BODY_TOO_MANY_VALUES', `the request body holds more than ${exceeded.limit} objects, arrays and strings (keys included)`, 413, 'body_too_many_values');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (err) {
    throw badRequestError(`the request body is not JSON: ${(err as Error).message}`);
  }
  // The bytes stay with the object they were parsed into, copied out of a larger read buffer
  // (a small body would otherwise keep the socket's whole read alive until the upstream answers).
  // A top-level key given twice reads differently to other parsers (first wins, or refused):
  // such a body goes upstream as the gateway read it, serialized again.
  if (isObject(parsed) && counts.topLevelKeys === Object.keys(parsed).length) {
    sentBytes.set(parsed, bytes.byteLength === bytes.buffer.byteLength ? bytes : Buffer.from(bytes));
  }
  return parsed;
}

const sentBytes = new WeakMap<object, Buffer>();

/**
 * The bytes the client sent for a JSON body that {@link parseJsonBody} returned, so the upstream
 * gets them as sent: `JSON.stringify` of the parsed value would round numbers past 2^53
 * (`"seed": 18446744073709551615`), turn `1e999` into `null` and `-0` into `0`. `undefined` for
 * an array, a body with a top-level key given twice, and any other object (a body parsed
 * elsewhere, or built by the gateway).
 */
export function jsonBodyBytes(body: object): Buffer | undefined {
  return sentBytes.get(body);
}

function tooLarge(maxBytes: number): AdmissionError {
  return new AdmissionError('ERR_TIDEGATE_BODY_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`, 413, 'body_too_large');
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
