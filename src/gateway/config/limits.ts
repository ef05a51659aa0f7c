import { z } from 'zod';
import { headerName, int, ms } from './fields';

/** Admission limits of the gateway, resolved. */
export interface AdmissionLimits {
  maxRequestBodyBytes: number;
  maxRequestBodyValues: number;
  requestBodyTimeoutMs: number;
  headersTimeoutMs: number;
  maxConnections: number;
  maxStreams: number;
  maxStreamsPerClient: number;
  backlog: number;
  clientAddressHeader?: string | undefined;
  retryAfterSeconds: number;
}

/**
 * Admission defaults: 4 MiB bodies of at most 100000 JSON values within 30 s, headers within
 * 30 s, 10000 connections, 5000 streams, 100 per client, a listen backlog of 4096,
 * `Retry-After: 1`.
 */
export const DEFAULT_LIMITS: Readonly<Omit<AdmissionLimits, 'clientAddressHeader'>> = {
  maxRequestBodyBytes: 4 * 1024 * 1024,
  maxRequestBodyValues: 100_000,
  requestBodyTimeoutMs: 30_000,
  headersTimeoutMs: 30_000,
  maxConnections: 10_000,
  maxStreams: 5_000,
  maxStreamsPerClient: 100,
  backlog: 4096,
  retryAfterSeconds: 1,
};

/** The `limits` section: what a client may hold before it is refused (docs/gateway.md, "Running it in public"). */
export const limitsSchema = z
  .object({
    /** A request body larger than this is refused with 413 once its bytes pass it (or at once by `Content-Length`), bytes. */
    maxRequestBodyBytes: int(1).default(DEFAULT_LIMITS.maxRequestBodyBytes),
    /**
     * Objects, arrays and strings (keys included) a JSON request body may hold; past it 413,
     * found by a scan before the body is parsed (0 = no cap). Numbers and literals are not counted.
     */
    maxRequestBodyValues: int(0).default(DEFAULT_LIMITS.maxRequestBodyValues),
    /** A request body must arrive within this of its headers, else 408 and the connection is closed, ms (0 disables). */
    requestBodyTimeoutMs: ms(0).default(DEFAULT_LIMITS.requestBodyTimeoutMs),
    /** Request headers must arrive within this of the connection (or of the previous response), ms (Node's `server.headersTimeout`). */
    headersTimeoutMs: ms(1).default(DEFAULT_LIMITS.headersTimeoutMs),
    /** Open client connections; a request on one past this gets 503 and its connection is closed (0 = no cap). */
    maxConnections: int(0).default(DEFAULT_LIMITS.maxConnections),
    /** Concurrent streams over the gateway, from admission to the stream's end; past it 503 (0 = no cap). */
    maxStreams: int(0).default(DEFAULT_LIMITS.maxStreams),
    /** Concurrent streams of one client (its credential's hash, else its address); past it 429 (0 = no cap). */
    maxStreamsPerClient: int(0).default(DEFAULT_LIMITS.maxStreamsPerClient),
    /**
     * Connections the kernel completes and holds for the gateway to accept (Node's `backlog` of
     * `server.listen()`; Linux caps it at `net.core.somaxconn`). Past it the kernel drops a
     * client's handshake, and the client waits out TCP's retransmission timer (1 s, then 2 s, 4 s
     * …) before it is heard: a burst of arrivals faster than the event loop accepts them is
     * queued here instead.
     */
    backlog: int(1).default(DEFAULT_LIMITS.backlog),
    /**
     * A header carrying the client's address set by a trusted proxy, e.g. `x-forwarded-for`;
     * its right-most entry is used. Absent (default): the header is ignored and the socket's
     * peer address is the client's.
     */
    clientAddressHeader: headerName.optional(),
    /** `Retry-After` of a 429 or 503 refusal, seconds. */
    retryAfterSeconds: int(1).default(DEFAULT_LIMITS.retryAfterSeconds),
  })
  .strict()
  .prefault({});
