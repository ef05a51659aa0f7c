import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { BridgeElement } from '../../express/send-flow';
import type { Flow } from '../../flow/flow';
import type { Logger } from '../logger';
import { ResumeGapError, ResumeRequestError } from './errors';
import { MemoryResumeStore } from './memory-store';
import { slowestFollower } from './follow-positions';
import { followRedis, type RedisStreamKeys } from './redis-follower';
import type { ReplayStream, ReplayTerminal } from './replay-stream';
import { addAliasHolder, ALIAS_REUSED, aliasTransaction, dropAliasHolder, queueAliasHold, renewAliasHolder, type AliasKeys } from './alias-holders';
import type { DetachedStreamSnapshot, LogSnapshot, OpenOptions, ResumeStore, StoredStream, StreamMeta } from './store';

/** Options of a {@link RedisResumeStore}. */
export interface RedisStoreOptions {
  /** `redis://host:port/db`. */
  url: string;
  /** Prefix of every key (default `tidegate:`). */
  keyPrefix: string;
  /** Lifetime of the producing instance's lease without renewal, ms. */
  leaseMs: number;
  /** Bytes the local logs may hold together (as the memory store). */
  maxMemoryBytes: number;
  logger: Logger;
}

/** How often a producer reads the positions of its readers on other instances, ms. */
const FOLLOW_POLL_MS = 100;

/**
 * The shared store: each stream's events also go to a Redis Stream, so a resume that lands on
 * another instance replays from Redis and follows live there (`XREAD BLOCK`).
 *
 * | key | holds | lifetime |
 * |---|---|---|
 * | `<prefix>s:<id>` | a Redis Stream: event `seq` as entry `<seq>-0` (field `b`, the encoded bytes), the end as `<lastSeq>-1` (field `end`) | trimmed by `MINID` to the window; expires `retentionMs` after the end |
 * | `<prefix>s:<id>:meta` | route, credential hash, settings (JSON) | as the stream |
 * | `<prefix>s:<id>:lease` | the producing instance's id | `leaseMs`, renewed every third of it while it produces |
 * | `<prefix>s:<id>:followers` | a hash: per reader on another instance, the seq it has and its deadline | a field `leaseMs` after its last report; the hash as the latest |
 * | `<prefix>a:<alias>` | the stream id a provider's own id names (Responses: `response.id`), `!reused` once two held streams named it | as its last holder |
 * | `<prefix>ah:<alias>` | a sorted set: the streams that named the alias, each scored by the Redis time it stops being held | as its last holder |
 *
 * The producing instance keeps its {@link ReplayStream} (a resume that lands there attaches
 * locally); Redis is written in order on one connection, trimmed by the window the local log
 * keeps. A follower whose producer stopped renewing its lease before the end gets
 * `ERR_TIDEGATE_UPSTREAM_LOST`. A reader on another instance counts as attached for the
 * producer: each reports its position in its own field of the `followers` hash, and the producer
 * reads up to `windowBytes` ahead of the slowest live one (a field not renewed within `leaseMs`,
 * a follower whose instance died, no longer counts).
 */
export class RedisResumeStore implements ResumeStore {
  readonly kind = 'redis' as const;
  /** This process's id in leases. */
  readonly instanceId = randomBytes(8).toString('hex');
  private readonly redis: Redis;
  private readonly here: MemoryResumeStore;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly followers = new Set<Redis>();
  /** The alias of each stream produced here that named one (Responses: its `response.id`). */
  private readonly aliasOfStream = new Map<string, string>();

  constructor(private readonly options: RedisStoreOptions) {
    this.redis = new Redis(options.url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.redis.on('error', (err: Error) => options.logger.warn('redis', { error: err.message }));
    this.here = new MemoryResumeStore({
      maxBytes: options.maxMemoryBytes,
      hooks: (meta) => this.mirror(meta),
    });
  }

  open(source: Flow<BridgeElement>, meta: StreamMeta, options: OpenOptions = {}): ReplayStream {
    const keys = this.keys(meta.streamId);
    const liveMs = meta.settings.retentionMs + 2 * this.options.leaseMs;
    void this.redis
      .multi()
      .set(keys.meta, JSON.stringify(meta), 'PX', liveMs)
      .set(keys.lease, this.instanceId, 'PX', this.options.leaseMs)
      .exec()
      .then(this.warnFailed, this.warn);
    const stream = this.here.open(source, meta, options);
    // Renew the lease (and the stream's hold on its alias, in the same round trip); read where
    // the slowest reader on another instance is.
    const renew = setInterval(() => {
      const renewal = aliasTransaction(this.redis).set(keys.lease, this.instanceId, 'PX', this.options.leaseMs).pexpire(keys.meta, liveMs).pexpire(keys.events, liveMs);
      const alias = this.aliasOfStream.get(meta.streamId);
      if (alias !== undefined) queueAliasHold(renewal, this.aliasKeyPair(alias), meta.streamId, liveMs);
      void renewal.exec().then(this.warnFailed, this.warn);
    }, Math.max(10, Math.floor(this.options.leaseMs / 3)));
    const poll = setInterval(() => {
      slowestFollower(this.redis, keys.followers).then((seq) => stream.follow(seq), this.warn);
    }, FOLLOW_POLL_MS);
    for (const t of [renew, poll]) {
      t.unref();
      this.timers.add(t);
    }
    void stream.done.then(() => {
      for (const t of [renew, poll]) {
        clearInterval(t);
        this.timers.delete(t);
      }
    });
    return stream;
  }

  async find(streamId: string): Promise<StoredStream | undefined> {
    const here = await this.here.find(streamId);
    if (here !== undefined) return here;
    const keys = this.keys(streamId);
    const raw = await this.redis.get(keys.meta);
    if (raw === null) return undefined;
    const meta = JSON.parse(raw) as StreamMeta;
    return { meta, snapshot: () => this.remoteSnapshot(keys), reader: (afterSeq) => this.remoteReader(keys, afterSeq) };
  }

  async resolve(alias: string): Promise<string | undefined> {
    if (this.here.reused(alias)) return undefined;
    // Redis first: a stream on another instance may have named the alias too.
    const shared = await this.redis.get(this.aliasKey(alias));
    if (shared === ALIAS_REUSED) return undefined;
    const local = await this.here.resolve(alias);
    // A stream here named it, Redis names another: a claim that failed left the other's mapping.
    if (shared !== null && local !== undefined && shared !== local) return undefined;
    return shared ?? local;
  }

  local(streamId: string): ReplayStream | undefined {
    return this.here.local(streamId);
  }

  logBytes(): number {
    return this.here.logBytes();
  }

  cancelDetached(): number {
    return this.here.cancelDetached();
  }

  detachedStreams(): number {
    return this.here.detachedStreams();
  }

  describeDetached(): DetachedStreamSnapshot[] {
    return this.here.describeDetached();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
    await this.here.close();
    for (const f of this.followers) f.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  /** The entries of a stream produced on another instance, as {@link LogSnapshot}. */
  private async remoteSnapshot(keys: RedisStreamKeys): Promise<LogSnapshot> {
    const entries = (await this.redis.xrangeBuffer(keys.events, '-', '+')) as [Buffer, Buffer[]][];
    const events: Buffer[] = [];
    let firstSeq: number | undefined;
    let lastSeq = 0;
    let ended: LogSnapshot['ended'];
    for (const [idBuffer, fields] of entries) {
      const id = idBuffer.toString();
      if (fields[0]?.toString() === 'end') {
        ended = (JSON.parse((fields[1] as Buffer).toString()) as { kind: string }).kind === 'complete' ? 'complete' : 'error';
        continue;
      }
      lastSeq = seqOf(id);
      firstSeq ??= lastSeq;
      events.push(fields[1] as Buffer);
    }
    return { firstSeq: firstSeq ?? lastSeq + 1, lastSeq, events, ended };
  }

  /** A reader on this instance of a stream produced on another: checks the window, then follows the Redis Stream. */
  private async remoteReader(keys: RedisStreamKeys, afterSeq: number): Promise<Flow<Buffer>> {
    const [first, last] = await Promise.all([this.redis.xrange(keys.events, '-', '+', 'COUNT', 1), this.redis.xrevrange(keys.events, '+', '-', 'COUNT', 1)]);
    const firstSeq = first.length === 0 ? 1 : seqOf(first[0]![0]);
    const lastEntry = last[0];
    const lastSeq = lastEntry === undefined ? 0 : seqOf(lastEntry[0]);
    if (afterSeq > lastSeq) throw new ResumeRequestError(`event ${afterSeq} was never sent (the last is ${lastSeq})`);
    if (afterSeq < lastSeq && afterSeq + 1 < firstSeq) throw new ResumeGapError(afterSeq, firstSeq);
    const connection = this.redis.duplicate();
    connection.on('error', this.warn);
    this.followers.add(connection);
    return followRedis({
      redis: connection,
      control: this.redis,
      keys,
      afterSeq,
      leaseMs: this.options.leaseMs,
      release: () => {
        this.followers.delete(connection);
        connection.disconnect();
      },
    });
  }

  /** The hooks that write one stream's events and end to Redis, trimmed to its window. */
  private mirror(meta: StreamMeta): { onAppend(seq: number, bytes: Buffer, firstSeq: number): void; onEnd(t: ReplayTerminal): void; onAlias(alias: string): void } {
    const keys = this.keys(meta.streamId);
    const liveMs = meta.settings.retentionMs + 2 * this.options.leaseMs;
    return {
      onAlias: (alias) => {
        this.aliasOfStream.set(meta.streamId, alias);
        void this.claimAlias(alias, meta.streamId, liveMs);
      },
      onAppend: (seq, bytes, firstSeq) => {
        void this.redis.xadd(keys.events, 'MINID', String(firstSeq), `${seq}-0`, 'b', bytes).catch(this.warn);
      },
      onEnd: (t) => {
        const retention = meta.settings.retentionMs;
        const alias = this.aliasOfStream.get(meta.streamId);
        this.aliasOfStream.delete(meta.streamId);
        if (t.kind === 'cancelled') {
          void this.redis.del(keys.events, keys.meta, keys.lease, keys.followers).catch(this.warn);
          if (alias !== undefined) void dropAliasHolder(this.redis, this.aliasKeyPair(alias), meta.streamId).catch(this.warn);
          return;
        }
        const lastSeq = this.here.local(meta.streamId)?.window.lastSeq ?? 0;
        const end = t.kind === 'complete' ? { kind: 'complete' } : { kind: 'error', ...errorFields(t.error) };
        void this.redis
          .multi()
          .xadd(keys.events, `${lastSeq}-1`, 'end', JSON.stringify(end))
          .pexpire(keys.events, retention)
          .pexpire(keys.meta, retention)
          .del(keys.lease)
          .exec()
          .then(this.warnFailed, this.warn);
        if (alias !== undefined) this.holdAlias(alias, meta.streamId, retention);
      },
    };
  }

  /**
   * Adds `streamId` to the holders of `alias`: the alias key names it when no other held stream
   * (here or on another instance) named the alias, else {@link ALIAS_REUSED} until every holder
   * is gone (cancelled, or its retention over). One `warn` line when the alias becomes reused.
   */
  private async claimAlias(alias: string, streamId: string, liveMs: number): Promise<void> {
    try {
      if (await addAliasHolder(this.redis, this.aliasKeyPair(alias), streamId, liveMs)) {
        this.options.logger.warn('resume', { outcome: 'alias-reused', alias: alias.slice(0, 80) });
      }
    } catch (err) {
      this.warn(err);
    }
  }

  /** Keeps `streamId` a holder of `alias` for `ms` from now. */
  private holdAlias(alias: string, streamId: string, ms: number): void {
    void renewAliasHolder(this.redis, this.aliasKeyPair(alias), streamId, ms).catch(this.warn);
  }

  /** The alias key and its holders' key. */
  private aliasKeyPair(alias: string): AliasKeys {
    return { alias: this.aliasKey(alias), holders: `${this.options.keyPrefix}ah:${alias}` };
  }

  private aliasKey(alias: string): string {
    return `${this.options.keyPrefix}a:${alias}`;
  }

  private keys(streamId: string): RedisStreamKeys {
    const base = `${this.options.keyPrefix}s:${streamId}`;
    return { events: base, meta: `${base}:meta`, lease: `${base}:lease`, followers: `${base}:followers` };
  }

  private readonly warn = (err: unknown): void => {
    this.options.logger.warn('redis', { error: err instanceof Error ? err.message : String(err) });
  };

  /** Warns of a transaction's first failed command: ioredis resolves `exec()` with each command's error beside its result. */
  private readonly warnFailed = (results: [Error | null, unknown][] | null): void => {
    const failed = results?.find(([err]) => err !== null);
    if (failed !== undefined) this.warn(failed[0]);
  };
}

/** The seq of an entry id `<seq>-<n>`. */
export function seqOf(entryId: string): number {
  return Number(entryId.slice(0, entryId.indexOf('-')));
}

/** What a follower needs to rebuild an error the producer ended with: its code, message and status. */
function errorFields(error: unknown): { code: string; message: string; status?: number | undefined } {
  const e = error as { code?: unknown; message?: unknown; status?: unknown } | undefined;
  return {
    code: typeof e?.code === 'string' ? e.code : 'ERR_TIDEGATE_INTERNAL',
    message: typeof e?.message === 'string' ? e.message : String(error),
    status: typeof e?.status === 'number' ? e.status : undefined,
  };
}
