import { ConfigError, type GatewayConfig, type ResolvedRoute } from '../config';
import type { Logger } from '../logger';
import type { RedisResumeStore } from './redis-store';

/**
 * The `redis` resume store when some route asks for it (`resume.store: redis`), else `undefined`:
 * a gateway whose routes keep to the memory store never loads the Redis client nor connects.
 *
 * @throws {ConfigError} when a route asks for it and `redis.url` (`REDIS_URL`) is not set.
 */
export function redisStore(config: GatewayConfig, routes: readonly ResolvedRoute[], logger: Logger): RedisResumeStore | undefined {
  const users = routes.filter((r) => r.resume?.store === 'redis');
  if (users.length === 0) return undefined;
  const { url, keyPrefix, leaseMs } = config.redis;
  if (url === undefined) throw new ConfigError(`routes ${users.map((r) => r.path).join(', ')}: resume.store redis needs redis.url (or REDIS_URL)`);
  // Loaded here, not at import: a gateway without a Redis route never loads the Redis client.
  const { RedisResumeStore: Store } = require('./redis-store') as typeof import('./redis-store');
  return new Store({ url, keyPrefix, leaseMs, maxMemoryBytes: config.resumeStore.maxMemoryBytes, logger });
}
