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

/** A stream a resume found: who may read it, and its events after a given one. */
export interface StoredStream {
  readonly meta: StreamMeta;
  /**
   * The events after `afterSeq` then the live ones, as encoded bytes, ending as the original
   * ended. Resolves once the history is known to cover `afterSeq`.
   *
   * @throws {ResumeGapError} (410) when some of those events left the window.
   */
  reader(afterSeq: number): Promise<Flow<Buffer>>;
}

/**
 * Where replay logs live. A store opens the log of a stream produced on this instance
 * ({@link open}) and finds a stream for a resume ({@link find}), on this instance or, for a
 * shared store, on any.
 */
export interface ResumeStore {
  readonly kind: ResumeSettings['store'];
  /** Shares `source` as a {@link ReplayStream} whose log this store keeps until its retention ends. */
  open(source: Flow<BridgeElement>, meta: StreamMeta, isKeepAlive?: ReplayStreamOptions['isKeepAlive']): ReplayStream;
  /** The stream `streamId`, or `undefined` when unknown, expired or evicted. */
  find(streamId: string): Promise<StoredStream | undefined>;
  /** Bytes of every log this store holds in this process. */
  logBytes(): number;
  /** Streams produced here with no reader attached, lingering. */
  detachedStreams(): number;
  /**
   * Shutdown: cancels at once every stream produced here with no reader attached, and each other
   * one as soon as its last reader leaves (no linger); returns how many it cancelled now.
   */
  cancelDetached(): number;
  /** Drops every log and releases connections and timers. */
  close(): Promise<void>;
}
