import type http from 'node:http';
import type { Flow } from '../flow/flow';
import type { FollowRedirects } from '../http/call';
import { sendUpstream } from '../http/request';
import { upstreamAgent } from '../http/node-hooks';

/** @internal What one attempt of the SSE client sends. */
export interface SseRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer> | undefined;
}

/**
 * @internal One attempt's answer, its body not read yet: what the session needs of a response,
 * whether tidegate's HTTP stack or a caller's `fetch` sent the request.
 */
export interface SseAnswer {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** The body as bytes with demand (read only while requested). Subscribe once. */
  body(): Flow<Uint8Array>;
  /** The first `maxBytes` of the body as UTF-8 text ('' if it breaks); the response is released after. */
  text(maxBytes: number): Promise<string>;
  /**
   * `text()` itself ends at a silence of the attempt's `idleTimeoutMs` (else its first-byte
   * timeout) with what arrived; the session's idle timer then stops at the answer. Absent: the
   * session's timer keeps bounding the read.
   */
  readonly textTimesSilence?: boolean;
  /** Releases the response without reading it. */
  release(): void;
}

/** @internal Sends one attempt; aborting `signal` aborts it (and its body, once answered). */
export type SseTransport = (request: SseRequest, signal: AbortSignal) => Promise<SseAnswer>;

/**
 * The keep-alive agent `connectSse` uses by default: the upstream agent of tidegate's HTTP stack
 * (`Infinity` sockets, so SSE streams never queue behind other calls; reads sized from one
 * shared buffer, a 4 KiB high-water mark per response).
 */
export function defaultSseAgent(url: URL): http.Agent {
  return upstreamAgent(url);
}

/**
 * @internal Attempts through tidegate's HTTP stack (`src/http`): node-fetch 2 on the upstream
 * agent (or a view of the caller's `agent`), connect and first-byte timeouts, sized reads,
 * typed network errors that never carry the URL.
 */
export function httpTransport(options: { agent: http.Agent | undefined; connectTimeoutMs: number; firstByteTimeoutMs: number; idleTimeoutMs?: number | undefined; followRedirects: FollowRedirects; route?: string | undefined }): SseTransport {
  const textTimesSilence = (options.idleTimeoutMs ?? 0) > 0 || options.firstByteTimeoutMs > 0;
  return (request, signal) =>
    sendUpstream({
      url: request.url.href,
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal,
      agent: options.agent,
      connectTimeoutMs: options.connectTimeoutMs,
      firstByteTimeoutMs: options.firstByteTimeoutMs,
      // Times an error body's silence; the stream's silence is timed by events (connectSse's idle timer).
      idleTimeoutMs: options.idleTimeoutMs,
      idleTimedByEvents: true,
      followRedirects: options.followRedirects,
      route: options.route,
    }).then((answer) => ({ ...answer, textTimesSilence }));
}
