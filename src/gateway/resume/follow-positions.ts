import type { Redis } from 'ioredis';

// One hash per stream, one field per follower: `<seq>:<deadline ms>`, the deadline on Redis' own
// clock (`TIME`), so instances' clocks never compare. A field past its deadline is a follower
// that stopped reporting (its instance died): the producer's read drops it.

const REPORT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. (now + tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

const SLOWEST = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local slowest = nil
for i = 1, #all, 2 do
  local v = all[i + 1]
  local sep = string.find(v, ':', 1, true)
  local seq = sep and tonumber(string.sub(v, 1, sep - 1))
  local deadline = sep and tonumber(string.sub(v, sep + 1))
  if seq == nil or deadline == nil or deadline <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif slowest == nil or seq < slowest then
    slowest = seq
  end
end
return slowest`;

interface FollowCommands {
  tidegateReportFollower(key: string, followerId: string, seq: string, leaseMs: string): Promise<unknown>;
  tidegateSlowestFollower(key: string): Promise<number | null>;
}

const defined = new WeakSet<Redis>();

function commands(redis: Redis): FollowCommands {
  if (!defined.has(redis)) {
    redis.defineCommand('tidegateReportFollower', { numberOfKeys: 1, lua: REPORT });
    redis.defineCommand('tidegateSlowestFollower', { numberOfKeys: 1, lua: SLOWEST });
    defined.add(redis);
  }
  return redis as unknown as FollowCommands;
}

/**
 * Records that follower `followerId` of a stream has every event up to `seq`, in the stream's
 * followers hash `key`, live for `leaseMs` unless reported again (the hash itself lives as long
 * as its latest report). One field per follower: several followers of one stream, on any
 * instances, never overwrite each other's position.
 */
export function reportFollower(redis: Redis, key: string, followerId: string, seq: number, leaseMs: number): Promise<unknown> {
  return commands(redis).tidegateReportFollower(key, followerId, String(seq), String(leaseMs));
}

/**
 * The position of the slowest live follower in the followers hash `key` (the smallest `seq`
 * reported within its `leaseMs`), `undefined` when none is live; fields past their deadline are
 * deleted on the way.
 */
export async function slowestFollower(redis: Redis, key: string): Promise<number | undefined> {
  const seq = await commands(redis).tidegateSlowestFollower(key);
  return seq === null || seq === undefined ? undefined : Number(seq);
}

/** Removes follower `followerId` (it ended): it no longer bounds the producer. */
export function dropFollower(redis: Redis, key: string, followerId: string): Promise<unknown> {
  return redis.hdel(key, followerId);
}
