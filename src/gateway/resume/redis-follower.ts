import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { TidegateError } from '../../errors';
import { addDemand } from '../../flow/demand';
import { Flow } from '../../flow/flow';
import { ResumeGapError, UpstreamLostError } from './errors';
import { dropFollower, reportFollower } from './follow-positions';

/** The Redis keys of one stream (see `RedisResumeStore`). */
export interface RedisStreamKeys {
  events: string;
  meta: string;
  lease: string;
  /** A hash: each follower's position (see `follow-positions.ts`). */
  followers: string;
}

/** Options of {@link followRedis}. */
export interface FollowOptions {
  /** A connection of this reader's own: `XREAD BLOCK` holds it. */
  redis: Redis;
  /** The store's shared connection (lease checks, the followers hash). */
  control: Redis;
  keys: RedisStreamKeys;
  /** The last seq the client has. */
  afterSeq: number;
  leaseMs: number;
  /** Called once when the reader ends, however it ends. */
  release(): void;
}

/** Entries read per `XREAD`, at most. */
const MAX_BATCH = 128;

/**
 * A stream produced on another instance, read from its Redis Stream: the entries after
 * `afterSeq`, then the live ones (`XREAD BLOCK`), as encoded bytes, ending as the producer ended
 * (its `end` entry). It reports its position under its own field of the stream's followers hash
 * (renewed every third of `leaseMs`, removed when it ends), so the producer keeps reading for it
 * and, with several followers, for the slowest; while it waits, it checks the producer's lease, and signals
 * {@link UpstreamLostError} once the lease is gone without an end.
 *
 * Demand: one `XREAD` of at most `min(demand, 128)` entries at a time, only while there is demand.
 * Discard: nothing held between reads (one batch at most, within demand).
 */
export function followRedis(o: FollowOptions): Flow<Buffer> {
  return new Flow<Buffer>((actual) => {
    let demand = 0;
    let reading = false;
    let done = false;
    let lastId = `${o.afterSeq}-0`;
    let expected = o.afterSeq + 1;
    const followerId = randomBytes(8).toString('hex');
    const report = (): void => {
      if (!done) void reportFollower(o.control, o.keys.followers, followerId, expected - 1, o.leaseMs).catch(() => undefined);
    };
    // Attached while subscribed, also while its client's socket is full and nothing is read.
    const keepAlive = setInterval(report, Math.max(10, Math.floor(o.leaseMs / 3)));
    keepAlive.unref();
    const end = (signal: () => void): void => {
      if (done) return;
      done = true;
      clearInterval(keepAlive);
      void dropFollower(o.control, o.keys.followers, followerId).catch(() => undefined);
      o.release();
      signal();
    };
    const read = async (): Promise<void> => {
      if (reading || done) return;
      reading = true;
      try {
        while (demand > 0 && !done) {
          report();
          const count = Math.min(MAX_BATCH, demand === Infinity ? MAX_BATCH : demand);
          const block = Math.max(10, Math.floor(o.leaseMs / 3));
          const answer = (await o.redis.xreadBuffer('COUNT', count, 'BLOCK', block, 'STREAMS', o.keys.events, lastId)) as [Buffer, [Buffer, Buffer[]][]][] | null;
          if (done) return;
          const entries = answer?.[0]?.[1] ?? [];
          if (entries.length === 0) {
            // Nothing new within a third of the lease: is the producer still there?
            if ((await o.control.exists(o.keys.lease)) === 0) {
              const tail = (await o.redis.xreadBuffer('COUNT', 1, 'STREAMS', o.keys.events, lastId)) as [Buffer, [Buffer, Buffer[]][]][] | null;
              if ((tail?.[0]?.[1] ?? []).length === 0) return end(() => actual.onError(new UpstreamLostError()));
            }
            continue;
          }
          for (const [idBuffer, fields] of entries) {
            if (done) return;
            const id = idBuffer.toString();
            lastId = id;
            const field = fields[0]?.toString();
            const value = fields[1] as Buffer;
            if (field === 'end') {
              const ended = JSON.parse(value.toString()) as { kind: string; code?: string; message?: string; status?: number };
              if (ended.kind === 'complete') return end(() => actual.onComplete());
              const error = Object.assign(new TidegateError(ended.code ?? 'ERR_TIDEGATE_INTERNAL', ended.message ?? 'the stream ended with an error'), ended.status === undefined ? {} : { status: ended.status });
              return end(() => actual.onError(error));
            }
            const seq = Number(id.slice(0, id.indexOf('-')));
            // Trimmed past us while we read: a hole, never skipped in silence.
            if (seq !== expected) return end(() => actual.onError(new ResumeGapError(expected - 1, seq)));
            expected++;
            if (demand !== Infinity) demand--;
            actual.onNext(value);
          }
        }
        if (!done) report();
      } catch (err) {
        if (!done) end(() => actual.onError(err));
      } finally {
        reading = false;
      }
    };
    actual.onSubscribe({
      request(n: number) {
        if (done) return;
        if (!(n > 0)) return end(() => actual.onError(new RangeError(`request(${n}): n must be positive (Reactive Streams rule 3.9)`)));
        demand = addDemand(demand, n);
        void read();
      },
      cancel() {
        end(() => undefined);
      },
    });
  });
}
