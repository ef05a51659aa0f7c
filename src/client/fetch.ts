import type http from 'node:http';
import type { Readable } from 'node:stream';
import nodeFetch from 'node-fetch';
import { SseBodyError } from '../errors';
import { Flow } from '../flow/flow';
import { fromReadable } from '../flow/sources/readable';
import { fromReadableStream } from '../flow/sources/readable-stream';
import type { SseAnswer, SseTransport } from './transport';

/**
 * What `connectSse` passes to a caller's `fetch` (the `fetch` option). node-fetch 2 reads
 * `agent` and `compress`; native fetch (undici) ignores them.
 */
export interface SseFetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array<ArrayBuffer> | undefined;
  /** Aborted when the client tears the connection down (cancel, idle timeout, reconnect). */
  signal: AbortSignal;
  agent?: http.Agent | undefined;
  compress?: boolean | undefined;
}

/**
 * The part of a fetch `Response` the client reads. `body` is a Node `Readable` (node-fetch 2) or
 * a WHATWG `ReadableStream<Uint8Array>` (native fetch, undici).
 */
export interface SseFetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly body: unknown;
}

/** A fetch function: node-fetch 2, native `fetch`, undici's `fetch`, or a test double. */
export type SseFetch = (url: string, init: SseFetchInit) => Promise<SseFetchResponse>;

/**
 * node-fetch 2 as an {@link SseFetch}, for a caller who wants node-fetch without tidegate's HTTP
 * stack (its default agent, no connect or first-byte timeout). `connectSse` without a `fetch`
 * uses tidegate's HTTP stack, which is node-fetch 2 too.
 */
export const nodeFetchSse: SseFetch = (url, init) => nodeFetch(url, init as never) as unknown as Promise<SseFetchResponse>;

/** @internal Attempts through a caller's `fetch`: its response adapted to an {@link SseAnswer}. */
export function fetchTransport(fetch: SseFetch, agent: http.Agent | undefined): SseTransport {
  return async (request, signal) => {
    // `compress: true` keeps our `Accept-Encoding: identity` but lets node-fetch gunzip a server
    // that compresses anyway: raw gzip bytes fed to the parser would end as an empty stream.
    const response = await fetch(request.url.href, { method: request.method, headers: request.headers, body: request.body, signal, agent, compress: true });
    return answerOf(response);
  };
}

function answerOf(response: SseFetchResponse): SseAnswer {
  const { body } = response;
  return {
    status: response.status,
    headers: response.headers,
    body: () => bodyFlow(body),
    text: (maxBytes) => readBodyText(body, maxBytes).catch(() => ''),
    release: () => discardBody(body),
  };
}

interface WebBody {
  getReader(): ReadableStreamDefaultReader<Uint8Array>;
}

function isNodeBody(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).on === 'function' && typeof (body as Readable).pause === 'function';
}

function isWebBody(body: unknown): body is WebBody {
  return typeof body === 'object' && body !== null && typeof (body as WebBody).getReader === 'function';
}

const noop = (): void => undefined;

/**
 * A response body as bytes with demand: a Node `Readable` through `fromReadable` (paused while
 * there is no demand), a WHATWG stream through `fromReadableStream`. Anything else (a string,
 * an object, no body) signals {@link SseBodyError}. For a Node body a no-op `'error'` listener stays attached: node-fetch emits `'error'`
 * on the body when the request is aborted after the response arrived, which must not crash the
 * process once `fromReadable` has detached.
 */
function bodyFlow(body: unknown): Flow<Uint8Array> {
  if (isNodeBody(body)) {
    body.on('error', noop);
    return fromReadable<Uint8Array>(body);
  }
  if (isWebBody(body)) return fromReadableStream<Uint8Array>(body as unknown as ReadableStream<Uint8Array>);
  return new Flow<Uint8Array>((actual) => {
    actual.onSubscribe({ request: noop, cancel: noop });
    actual.onError(new SseBodyError(body === null ? 'null' : typeof body));
  });
}

/** Releases a body that will not be streamed (Node: destroyed; WHATWG: cancelled). */
function discardBody(body: unknown): void {
  if (isNodeBody(body)) {
    body.on('error', noop);
    body.destroy();
  } else if (isWebBody(body)) {
    void (body as unknown as ReadableStream<Uint8Array>).cancel().catch(noop);
  }
}

/** Reads a body as UTF-8 text, at most `maxBytes` (the rest is dropped and the body released). */
async function readBodyText(body: unknown, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const add = (chunk: Uint8Array | string): boolean => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const room = maxBytes - size;
    chunks.push(buf.length > room ? buf.subarray(0, room) : buf);
    size += Math.min(buf.length, room);
    return size < maxBytes;
  };
  if (isNodeBody(body)) {
    body.on('error', noop);
    for await (const chunk of body as AsyncIterable<Uint8Array | string>) if (!add(chunk)) break;
  } else if (isWebBody(body)) {
    const reader = body.getReader();
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done || !add(r.value)) break;
      }
    } finally {
      void reader.cancel().catch(noop);
    }
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
