import type { Flow } from '../../flow/flow';
import type { BridgeElement } from '../../express/send-flow';
import type { ReplayStream, ReplayStreamOptions } from './replay-stream';
import type { ResumeSettings } from './settings';

/** What a store keeps about a stream besides its events. */
export interface StreamMeta {
  readonly streamId: string;
  /** Path of the route that started it (its error shape and policy serve the resume). */
  readonly routePath: string;
  /** {@link credentialHash} of the starting request's credential (`''`: none). */
  readonly credentialHash: string;
  readonly settings: ResumeSettings;
}

/** The events a stream's log holds now, oldest first: events `firstSeq`..`lastSeq`, encoded. */
export interface LogSnapshot {
  /** Seq of `events[0]` (`lastSeq + 1` when the log holds none). */
  readonly firstSeq: number;
  /** Seq of the newest event relayed (0 before the first). */
  readonly lastSeq: number;
  /** Each kept event's encoded SSE bytes, as its readers get them. */
  readonly events: readonly Buffer[];
  /** How the stream ended (`undefined` while it runs). */
  readonly ended: 'complete' | 'error' | undefined;
}

/** Options of {@link ResumeStore.open} besides the stream's meta. */
export interface OpenOptions {
  /** Provider keep-alive events, which get no seq (see {@link ReplayStreamOptions}). */
  isKeepAlive?: ReplayStreamOptions['isKeepAlive'];
  /**
   * Reads the id a client may resume the stream by in the provider's own form from one event's
   * encoded bytes (Responses: `response.id`); asked of the first {@link ALIAS_SCAN_EVENTS} events
   * until it names one, which {@link ResumeStore.resolve} then maps to the stream.
   */
  aliasOf?: ((event: Buffer) => string | undefined) | undefined;
}

/** How many of a stream's first events are read for its alias. */
export const ALIAS_SCAN_EVENTS = 8;

/** A stream a resume found: who may read it, and its events after a given one. */
export interface StoredStream {
  readonly meta: StreamMeta;
  /** The log as it is now (a resume maps a provider's own position to a seq with it). */
  snapshot(): Promise<LogSnapshot>;
  /**
   * The events after `afterSeq` then the live ones, as encoded bytes, ending as the original
   * ended. Resolves once the history is known to cover `afterSeq`.
   *
   * @throws {ResumeGapError} (410) when some of those events left the window.
   */
  reader(afterSeq: number): Promise<Flow<Buffer>>;
}

/** A stream produced here that no reader reads now ({@link ResumeStore.describeDetached}). */
export interface DetachedStreamSnapshot {
  streamId: string;
  route: string;
  /** Encoded bytes of its log: history plus read-ahead, at most 2 × `windowBytes` plus one event. */
  logBytes: number;
  /** Seq of the last event it read from the upstream. */
  lastSeq: number;
}

/**
 * Where replay logs live. A store opens the log of a stream produced on this instance
 * ({@link open}) and finds a stream for a resume ({@link find}), on this instance or, for a
 * shared store, on any.
 */
export interface ResumeStore {
  readonly kind: ResumeSettings['store'];
  /** Shares `source` as a {@link ReplayStream} whose log this store keeps until its retention ends. */
  open(source: Flow<BridgeElement>, meta: StreamMeta, options?: OpenOptions): ReplayStream;
  /** The stream `streamId`, or `undefined` when unknown, expired or evicted. */
  find(streamId: string): Promise<StoredStream | undefined>;
  /**
   * The stream id an alias ({@link OpenOptions.aliasOf}) names, or `undefined`; kept as long as
   * its stream. An alias two streams named (an upstream that reuses its ids) names neither until
   * both are gone: a client asking by it might otherwise read another client's stream.
   */
  resolve(alias: string): Promise<string | undefined>;
  /** The running or retained stream `streamId` produced in this process, `undefined` for any other. */
  local(streamId: string): ReplayStream | undefined;
  /** Bytes of every log this store holds in this process. */
  logBytes(): number;
  /** Streams produced here with no reader attached, lingering. */
  detachedStreams(): number;
  /** What each of them holds, for `GET /debug/streams`. */
  describeDetached(): DetachedStreamSnapshot[];
  /**
   * Shutdown: cancels at once every stream produced here with no reader attached, and each other
   * one as soon as its last reader leaves (no linger); returns how many it cancelled now.
   */
  cancelDetached(): number;
  /** Drops every log and releases connections and timers. */
  close(): Promise<void>;
}
