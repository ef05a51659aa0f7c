import type { ChainableCommander, Redis } from 'ioredis';

// An alias (a provider's own id of a stream, e.g. a Responses `response.id`) is two keys: the
// alias key, naming one stream id or `!reused`, and a sorted set of its holders, the streams
// that named it, each scored by the time (ms, Redis's own clock `TIME`, so instances' clocks
// never compare) its stream stops being held. Both live as long as the last holder; a holder
// past its time is dropped on the next change.

const NOW = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
`;

const EXPIRE = `
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if last[2] == nil then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
local ms = math.max(1, tonumber(last[2]) - now)
redis.call('PEXPIRE', KEYS[1], ms)
redis.call('PEXPIRE', KEYS[2], ms)
`;

// ARGV: stream id, ms it is held for, the reused value. Returns 1 when the alias just stopped
// naming one stream.
const CLAIM = `${NOW}
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
local reused = 0
if redis.call('ZCARD', KEYS[2]) == 1 then
  redis.call('SET', KEYS[1], ARGV[1])
else
  if redis.call('GET', KEYS[1]) ~= ARGV[3] then reused = 1 end
  redis.call('SET', KEYS[1], ARGV[3])
end
${EXPIRE}
return reused`;

// ARGV: stream id, ms it is held for from now.
const HOLD = `${NOW}
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1])
${EXPIRE}
return 0`;

// ARGV: stream id.
const DROP = `${NOW}
redis.call('ZREM', KEYS[2], ARGV[1])
${EXPIRE}
return 0`;

/** The alias key's value once two held streams named the alias: it names none (never a stream id). */
export const ALIAS_REUSED = '!reused';

/** The two keys of one alias: the alias key (a stream id or {@link ALIAS_REUSED}) and its holders' sorted set. */
export interface AliasKeys {
  alias: string;
  holders: string;
}

interface AliasCommands {
  tidegateAliasClaim(alias: string, holders: string, streamId: string, ms: string, reused: string): Promise<number>;
  tidegateAliasHold(alias: string, holders: string, streamId: string, ms: string): Promise<number>;
  tidegateAliasDrop(alias: string, holders: string, streamId: string): Promise<number>;
}

const defined = new WeakSet<Redis>();

function commands(redis: Redis): AliasCommands {
  if (!defined.has(redis)) {
    redis.defineCommand('tidegateAliasClaim', { numberOfKeys: 2, lua: CLAIM });
    redis.defineCommand('tidegateAliasHold', { numberOfKeys: 2, lua: HOLD });
    redis.defineCommand('tidegateAliasDrop', { numberOfKeys: 2, lua: DROP });
    defined.add(redis);
  }
  return redis as unknown as AliasCommands;
}

/**
 * Adds `streamId` to the holders of an alias for `ms` from now (Redis's clock), in one atomic
 * step: the alias key names `streamId` when it is the only holder, else {@link ALIAS_REUSED}
 * until every holder is gone, as the memory store does. Resolves `true` when this claim made
 * the alias stop naming one stream (the caller logs it once).
 */
export async function addAliasHolder(redis: Redis, keys: AliasKeys, streamId: string, ms: number): Promise<boolean> {
  return (await commands(redis).tidegateAliasClaim(keys.alias, keys.holders, streamId, String(ms), ALIAS_REUSED)) === 1;
}

/** Keeps `streamId`, already a holder, held for `ms` from now (a running stream's renewal, a finished one's retention). */
export function renewAliasHolder(redis: Redis, keys: AliasKeys, streamId: string, ms: number): Promise<unknown> {
  return commands(redis).tidegateAliasHold(keys.alias, keys.holders, streamId, String(ms));
}

/**
 * A transaction (`MULTI`) on `redis` that {@link queueAliasHold} can add to: ioredis gives a
 * transaction the scripts defined before it was opened.
 */
export function aliasTransaction(redis: Redis): ChainableCommander {
  commands(redis);
  return redis.multi();
}

/**
 * Queues in `multi` (from {@link aliasTransaction}) what {@link renewAliasHolder} does, so that a
 * running stream renews its alias in the same round trip as its lease. Its result is the
 * transaction's.
 */
export function queueAliasHold(multi: ChainableCommander, keys: AliasKeys, streamId: string, ms: number): void {
  void (multi as unknown as AliasCommands).tidegateAliasHold(keys.alias, keys.holders, streamId, String(ms));
}

/** Removes holder `streamId` (its stream was cancelled); both keys go with the last holder. */
export function dropAliasHolder(redis: Redis, keys: AliasKeys, streamId: string): Promise<unknown> {
  return commands(redis).tidegateAliasDrop(keys.alias, keys.holders, streamId);
}
