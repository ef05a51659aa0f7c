import { ConfigError, type GatewayConfig, type ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import { RedisResumeStore } from './redis-store';

/**
 * The `redis` resume store when some route asks for it (`resume.store: redis`), else `undefined`:
 * a gateway whose routes keep to the memory store never connects to Redis.
 *
 * @throws {ConfigError} when a route asks for it and `redis.url` (`REDIS_URL`) is not set.
 */
export function redisStore(config: GatewayConfig, routes: readonly ResolvedRoute[], logger: Logger): RedisResumeStore | undefined {
  const users = routes.filter((r) => r.resume?.store === 'redis');
  if (users.length === 0) return undefined;
  const { url, keyPrefix, leaseMs } = config.redis;
  if (url === undefined) throw new ConfigError(`routes ${users.map((r) => r.path).join(', ')}: resume.store redis needs redis.url (or REDIS_URL)`);
  return new RedisResumeStore({ url, keyPrefix, leaseMs, maxMemoryBytes: config.resumeStore.maxMemoryBytes, logger });
}
