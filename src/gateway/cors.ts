import type { IncomingMessage } from 'node:http';
import cors, { type CorsOptions } from 'cors';
import type { RequestHandler } from 'express';
import type { CorsSettings } from './config';

/**
 * Request headers a page may send: what the OpenAI and Anthropic SDKs send from a browser, the
 * SSE client's `Last-Event-ID`, and every `x-stainless-*` header (the SDKs' telemetry, whose
 * set grows with each SDK version).
 */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  'authorization',
  'x-api-key',
  'content-type',
  'accept',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'idempotency-key',
  'x-request-id',
  'last-event-id',
];

/** Response headers a page may read: the stream's id, `Retry-After` of a refusal, the request id. */
export const CORS_EXPOSED_HEADERS: readonly string[] = ['x-tidegate-stream-id', 'retry-after', 'x-request-id', 'request-id'];

const ALLOWED = new Set(CORS_ALLOWED_HEADERS);

/** The headers a preflight asked for that may be sent (listed, or `x-stainless-*`), lower case. */
function allowedOf(req: IncomingMessage): string[] {
  const asked = String(req.headers['access-control-request-headers'] ?? '');
  return asked
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '' && (ALLOWED.has(h) || h.startsWith('x-stainless-')));
}

/**
 * The CORS middleware of the gateway (the `cors` package), or `undefined` when no origin is
 * allowed. An allowed origin gets `Access-Control-Allow-Origin` (and `Vary: Origin`) on every
 * answer, streams and refusals included, and its preflight (`OPTIONS`) is answered 204 with the
 * methods (`GET`, `POST`), the headers it asked for that {@link CORS_ALLOWED_HEADERS} allows
 * and `Access-Control-Max-Age`. Another origin gets no `Access-Control-*` header: its browser
 * refuses the answer.
 *
 * @example
 * const mw = corsMiddleware({ origins: ['https://app.example.com'], credentials: false, maxAgeMs: 600_000 });
 * if (mw) app.use(mw);
 */
export function corsMiddleware(settings: CorsSettings): RequestHandler | undefined {
  if (settings.origins.length === 0) return undefined;
  const any = settings.origins.includes('*');
  const base: CorsOptions = {
    // `*` with credentials is refused by browsers: the origin is echoed instead.
    origin: any ? (settings.credentials ? true : '*') : settings.origins,
    credentials: settings.credentials,
    methods: ['GET', 'POST'],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: Math.floor(settings.maxAgeMs / 1000),
    optionsSuccessStatus: 204,
  };
  return cors((req, callback) => callback(null, { ...base, allowedHeaders: allowedOf(req) })) as RequestHandler;
}
