import { z } from 'zod';
import { int, ms } from '../config/fields';

/**
 * A route's `resume` settings as written: `true` turns resume on with the defaults, an object
 * overrides any of them, `false` (or absent) leaves it off.
 */
export const resumeSchema = z.union([
  z.boolean(),
  z
    .object({
      /** `memory` (this process, the default) or `redis` (shared by every instance; needs `redis.url`). */
      store: z.enum(['memory', 'redis']).optional(),
      /** Bytes of encoded events a stream's replay log keeps, and how far a detached stream reads ahead, bytes. */
      windowBytes: int(1024).optional(),
      /** How long a stream with no reader keeps its upstream before cancelling it, ms (0 = at once). */
      lingerMs: ms(0).optional(),
      /** How long a stream's log is kept after the stream ended, ms. */
      retentionMs: ms(0).optional(),
      /** Whether resume is on (default `true` when the object is given). */
      enabled: z.boolean().optional(),
    })
    .strict(),
]);

/** A route's resume settings, resolved. */
export interface ResumeSettings {
  store: 'memory' | 'redis';
  windowBytes: number;
  lingerMs: number;
  retentionMs: number;
}

/** Defaults once resume is on: the memory store, a 1 MiB window, 30 s linger, 5 min retention. */
export const DEFAULT_RESUME: Readonly<ResumeSettings> = { store: 'memory', windowBytes: 1024 * 1024, lingerMs: 30_000, retentionMs: 5 * 60_000 };

/** Resolves a route's `resume` value: `undefined` when resume is off. */
export function resolveResume(raw: z.infer<typeof resumeSchema> | undefined): ResumeSettings | undefined {
  if (raw === undefined || raw === false) return undefined;
  if (raw === true) return { ...DEFAULT_RESUME };
  if (raw.enabled === false) return undefined;
  const { enabled: _omit, ...set } = raw;
  return { ...DEFAULT_RESUME, ...Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) };
}

/** Gateway-wide settings of the resume stores. */
export const resumeStoreSchema = z
  .object({
    /** Bytes all replay logs of the memory store may hold together; past it, finished streams' logs go, oldest first. */
    maxMemoryBytes: int(1024).default(256 * 1024 * 1024),
  })
  .strict()
  .prefault({});

/** The Redis connection of the `redis` store. */
export const redisSchema = z
  .object({
    /** `redis://host:port/db` (also `REDIS_URL`). */
    url: z.string().url().optional(),
    /** Key prefix of every key the gateway writes. */
    keyPrefix: z.string().default('tidegate:'),
    /** How long a producing instance's lease lives without renewal, ms; a follower learns of a dead producer within this. */
    leaseMs: ms(100).default(3000),
  })
  .strict()
  .prefault({});
