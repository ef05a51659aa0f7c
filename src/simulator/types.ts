/**
 * The simulator's public shapes: its options, the per-request record, the counters, the
 * events and the handle {@link createSimulator} returns. Types only; `server.ts` re-exports
 * them.
 */
import type * as http from 'node:http';
import type { SimFault } from './faults';
import type { Transcript } from './transcripts';

/** Options of {@link createSimulator}; all may be changed later with `configure()`. */
export interface SimulatorOptions {
  /** Replay rate in tokens per second (default 50). `Infinity`: as fast as backpressure allows. */
  tokensPerSecond?: number | undefined;
  /** Time to first token in ms: delay between the request and the status line (default 300). */
  ttftMs?: number | undefined;
  /** Transcript for a `model` that names none (default `'sim'`). */
  defaultTranscript?: string | undefined;
  /** Extra transcripts by name; they shadow the built-in ones. */
  transcripts?: Readonly<Record<string, Transcript>> | undefined;
  /** Fault for requests without an `x-sim-fault` header (default `'none'`). */
  fault?: SimFault | undefined;
  /** Tokens written before a mid-stream fault (default 3; capped at the transcript length). */
  faultAfterTokens?: number | undefined;
  /** `Retry-After` value in seconds for `status:429|503|529` (default 1). */
  retryAfterSeconds?: number | undefined;
  /** Split multi-byte characters across two writes for every transcript (default false). */
  splitUtf8?: boolean | undefined;
  /** Pause between the two halves of a split frame, ms (default 5). */
  splitDelayMs?: number | undefined;
  /** Largest request body accepted, bytes (default 1 MiB); larger gets 413. */
  maxBodyBytes?: number | undefined;
  /** Honour the `x-sim-*` request headers (default true). */
  allowHeaderOverrides?: boolean | undefined;
  /** How many finished request records `requests` keeps (default 1000). */
  maxRecords?: number | undefined;
}

/** How a simulated exchange ended. */
export type SimRequestOutcome =
  | 'active' // still running
  | 'completed' // the whole response was written and flushed
  | 'aborted' // the client left before the response finished
  | 'faulted' // an injected fault ended it (status, error-midstream, truncate, reset)
  | 'rejected' // a malformed request got a 4xx
  | 'closed'; // the simulator was closed while it ran

/** What the simulator saw and did for one API request. Updated live while `outcome` is `'active'`. */
export interface SimRequestRecord {
  /** `sim-<n>`, also sent as the `x-request-id` response header. */
  readonly id: string;
  readonly route: 'openai' | 'anthropic';
  /** The request's `model` field ('' until the body is parsed). */
  readonly model: string;
  /** The transcript replayed ('' if none). */
  readonly transcript: string;
  readonly stream: boolean;
  readonly fault: SimFault;
  /** HTTP status sent (0 before the status line). */
  readonly status: number;
  /** `Date.now()` at arrival and at the end (`undefined` while active). */
  readonly startedAt: number;
  readonly endedAt: number | undefined;
  /** Response body bytes handed to `res.write()`/`res.end()`. */
  readonly bytesWritten: number;
  /** Content tokens written. */
  readonly tokensWritten: number;
  /** Times `res.write()` returned false and the simulator waited for 'drain'. */
  readonly drainWaits: number;
  readonly outcome: SimRequestOutcome;
}

/** Counters over all API requests since start (health checks and 404s excluded). */
export interface SimulatorStats {
  readonly requests: number;
  readonly active: number;
  readonly completed: number;
  readonly aborted: number;
  readonly faulted: number;
  readonly rejected: number;
  readonly closed: number;
  /** Response body bytes written, all requests. */
  readonly bytesWritten: number;
  /** Times any response waited for 'drain'. */
  readonly drainWaits: number;
}

/** Events of a {@link Simulator}; listeners get the request's record. */
export interface SimulatorEvents {
  /** A valid API request was parsed and its response is about to start. */
  request: (record: SimRequestRecord) => void;
  /** An exchange ended, whatever the outcome. */
  'request-end': (record: SimRequestRecord) => void;
  /** The client left before the response finished (emitted before 'request-end'). */
  'request-aborted': (record: SimRequestRecord) => void;
}

/** A running (or ready) simulated upstream. */
export interface Simulator {
  /** The underlying server (not listening until `listen()`). */
  readonly server: http.Server;
  /** `http://host:port` once listening. OpenAI SDK `baseURL` is `${url}/v1`; Anthropic's is `url`. */
  readonly url: string | undefined;
  /** A snapshot of the counters. */
  readonly stats: SimulatorStats;
  /** Active and recent request records, oldest first (at most `maxRecords` finished ones). */
  readonly requests: readonly SimRequestRecord[];
  /** Starts listening; `port` 0 (default) picks a free one, `host` defaults to 127.0.0.1. */
  listen(port?: number, host?: string): Promise<{ port: number; url: string }>;
  /** Destroys running responses (outcome `'closed'`), closes every connection and the server. */
  close(): Promise<void>;
  /** Changes options for requests that arrive from now on. */
  configure(options: SimulatorOptions): void;
  on<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
  once<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
  off<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
}
