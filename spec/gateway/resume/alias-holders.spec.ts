import { Redis } from 'ioredis';
import { addAliasHolder, ALIAS_REUSED, aliasTransaction, dropAliasHolder, queueAliasHold, renewAliasHolder, type AliasKeys } from '../../../src/gateway/resume/alias-holders';
import { redisAvailable, startRedis, type RedisProcess } from '../../harness/redis';

// The alias scripts on a real redis-server: who an alias names as streams name it, renew it
// and leave, and how long its two keys live.

const run = redisAvailable() ? describe : describe.skip;

run('alias holders in Redis', () => {
  let server: RedisProcess;
  let redis: Redis;
  let n = 0;
  const keysOf = (): AliasKeys => {
    n++;
    return { alias: `t:a:resp_${n}`, holders: `t:ah:resp_${n}` };
  };
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  }, 20_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('names the one stream that holds it, and neither once a second one does', async () => {
    const keys = keysOf();
    expect(await addAliasHolder(redis, keys, 's1', 60_000)).toBe(false);
    expect(await redis.get(keys.alias)).toBe('s1');
    expect(await addAliasHolder(redis, keys, 's2', 60_000)).toBe(true);
    expect(await redis.get(keys.alias)).toBe(ALIAS_REUSED);
    // A third holder finds it reused already: no second report.
    expect(await addAliasHolder(redis, keys, 's3', 60_000)).toBe(false);
    expect(await redis.get(keys.alias)).toBe(ALIAS_REUSED);
  });

  it('stays reused while any holder is left, and both keys go with the last', async () => {
    const keys = keysOf();
    await addAliasHolder(redis, keys, 's1', 60_000);
    await addAliasHolder(redis, keys, 's2', 60_000);
    await dropAliasHolder(redis, keys, 's1');
    expect(await redis.get(keys.alias)).toBe(ALIAS_REUSED);
    await dropAliasHolder(redis, keys, 's2');
    expect(await redis.exists(keys.alias, keys.holders)).toBe(0);
    // The next stream to name it has it to itself.
    expect(await addAliasHolder(redis, keys, 's3', 60_000)).toBe(false);
    expect(await redis.get(keys.alias)).toBe('s3');
  });

  it('lives as long as its longest-held holder', async () => {
    const keys = keysOf();
    await addAliasHolder(redis, keys, 's1', 5_000);
    await addAliasHolder(redis, keys, 's2', 60_000);
    const ttl = await redis.pttl(keys.alias);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await redis.pttl(keys.holders)).toBeGreaterThan(50_000);
    // s2's retention is shorter than it was: the keys follow the holder held longest now.
    await renewAliasHolder(redis, keys, 's2', 10_000);
    expect(await redis.pttl(keys.alias)).toBeLessThanOrEqual(10_000);
    expect(await redis.pttl(keys.alias)).toBeGreaterThan(5_000);
  });

  it('drops a holder past its time on the next change', async () => {
    const keys = keysOf();
    await addAliasHolder(redis, keys, 's1', 60_000);
    await addAliasHolder(redis, keys, 's2', 30);
    expect(await redis.get(keys.alias)).toBe(ALIAS_REUSED);
    await sleep(80);
    await renewAliasHolder(redis, keys, 's1', 60_000);
    expect(await redis.zrange(keys.holders, '0', '-1')).toEqual(['s1']);
    // Still reused: an alias that named two streams names none until every holder is gone.
    expect(await redis.get(keys.alias)).toBe(ALIAS_REUSED);
  });

  it('renews in one transaction with other commands, on a connection that never ran the script', async () => {
    const keys = keysOf();
    await addAliasHolder(redis, keys, 's1', 5_000);
    const fresh = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      const multi = aliasTransaction(fresh).set(`${keys.alias}:lease`, 'i1', 'PX', 60_000);
      queueAliasHold(multi, keys, 's1', 60_000);
      const results = await multi.exec();
      expect(results?.map(([err]) => err)).toEqual([null, null]);
    } finally {
      fresh.disconnect();
    }
    expect(await redis.get(`${keys.alias}:lease`)).toBe('i1');
    expect(await redis.pttl(keys.alias)).toBeGreaterThan(50_000);
    expect(await redis.get(keys.alias)).toBe('s1');
  });

  it('renews only a stream that holds it', async () => {
    const keys = keysOf();
    await addAliasHolder(redis, keys, 's1', 60_000);
    await renewAliasHolder(redis, keys, 'other', 60_000);
    expect(await redis.zrange(keys.holders, '0', '-1')).toEqual(['s1']);
    expect(await redis.get(keys.alias)).toBe('s1');
  });
});
