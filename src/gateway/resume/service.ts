import type { Request } from 'express';
import type { BridgeElement } from '../../express/send-flow';
import type { Flow } from '../../flow/flow';
import type { ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import type { GatewayMetrics } from '../metrics';
import { credentialHash } from './ids';
import { MemoryResumeStore } from './memory-store';
import { ResumeMetrics } from './metrics';
import type { ReplayTerminal } from './replay-stream';
import type { ResumeSettings } from './settings';
import type { DetachedStreamSnapshot, OpenOptions, ResumeStore, StoredStream } from './store';

/** Gateway-wide settings of resume (top-level `resumeStore` and `redis`). */
export interface ResumeServiceOptions {
  /** Bytes all logs of the memory store may hold together. */
  maxMemoryBytes: number;
  metrics: GatewayMetrics;
  logger: Logger;
  /** The shared store, when a route uses `store: redis` (see `redis-store.ts`); built only then, so nothing else needs Redis. */
  redis?: ResumeStore | undefined;
}

/** A stream shared for resume: the first reader's events, and the end of the whole stream (every reader, the linger). */
export interface SharedStream {
  /** The first client's events, each with its `id: <streamId>:<seq>`. */
  readonly reader: Flow<BridgeElement>;
  /** Resolves when the upstream ended or was cancelled. */
  readonly done: Promise<ReplayTerminal>;
  /** Ends it from the gateway's side (shutdown, total timeout). */
  abort(reason: unknown): void;
  /** Ends it when its first reader never subscribed (its response failed first). */
  cancelIfUnread(): void;
}

/**
 * The gateway's resume side: the stores, the metrics, and the two things the rest of the
 * gateway asks of it: share a new stream ({@link share}) and find one to resume ({@link find}).
 */
export class ResumeService {
  readonly memory: MemoryResumeStore;
  readonly metrics: ResumeMetrics;
  /** Streams whose admission slot a resume borrows now ({@link lendSlot}). */
  private readonly lent = new Set<string>();

  constructor(private readonly options: ResumeServiceOptions) {
    this.memory = new MemoryResumeStore({
      maxBytes: options.maxMemoryBytes,
      onAliasReused: (alias) => options.logger.warn('resume', { outcome: 'alias-reused', alias: alias.slice(0, 80) }),
    });
    this.metrics = new ResumeMetrics(options.metrics, () => this.stores());
  }

  /**
   * Shares `flow` (a route's events after its policies) under `streamId` in the route's store,
   * and returns the first reader. The request's credential is kept as a hash; `options` names
   * the provider's keep-alive events, which get no seq, and reads the provider's own id of the
   * stream (see {@link OpenOptions}).
   */
  share(streamId: string, flow: Flow<BridgeElement>, route: ResolvedRoute & { resume: ResumeSettings }, req: Request, options: OpenOptions = {}): SharedStream {
    const store = this.storeFor(route.resume);
    const stream = store.open(flow, { streamId, routePath: route.path, credentialHash: credentialHash(req.headers), settings: route.resume }, options);
    return { reader: stream.reader(0), done: stream.done, abort: (reason) => stream.abort(reason), cancelIfUnread: () => stream.cancelIfUnread() };
  }

  /** The stream `streamId` in this process, else in the shared store; `undefined` when unknown or expired. */
  async find(streamId: string): Promise<StoredStream | undefined> {
    return (await this.memory.find(streamId)) ?? (await this.options.redis?.find(streamId));
  }

  /** The stream id a provider's own id of a stream names ({@link OpenOptions.aliasOf}), here or in the shared store. */
  async resolve(alias: string): Promise<string | undefined> {
    if (this.memory.reused(alias)) return undefined;
    return (await this.memory.resolve(alias)) ?? (await this.options.redis?.resolve(alias));
  }

  /**
   * Lends a resume of `streamId` the admission slot the stream holds, when the stream was
   * produced here, still runs, and nobody reads it (detached: no reader here nor on another
   * instance) and no other resume borrows it now: the client coming back takes its own stream
   * over instead of a second slot. Returns the end of the loan (call it once the resume's
   * response closed), or `undefined`: the resume takes a slot of its own (a stream read by
   * someone else, produced on another instance, ended, or already lent).
   */
  lendSlot(streamId: string): (() => void) | undefined {
    const stream = this.memory.local(streamId) ?? this.options.redis?.local(streamId);
    if (stream === undefined || !stream.detached || this.lent.has(streamId)) return undefined;
    this.lent.add(streamId);
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.lent.delete(streamId);
    };
  }

  /** The streams produced here that no reader reads now, in every store. */
  describeDetached(): DetachedStreamSnapshot[] {
    return this.stores().flatMap((s) => s.describeDetached());
  }

  /** Shutdown: see {@link ResumeStore.cancelDetached}; returns how many streams it cancelled now. */
  cancelDetached(): number {
    return this.stores().reduce((n, s) => n + s.cancelDetached(), 0);
  }

  /** Drops every log and closes the shared store's connections. */
  async close(): Promise<void> {
    await this.memory.close();
    await this.options.redis?.close();
  }

  private storeFor(settings: ResumeSettings): ResumeStore {
    if (settings.store === 'redis') {
      if (this.options.redis === undefined) throw new Error('resume store redis: no redis.url configured');
      return this.options.redis;
    }
    return this.memory;
  }

  private stores(): ResumeStore[] {
    return this.options.redis === undefined ? [this.memory] : [this.memory, this.options.redis];
  }
}
