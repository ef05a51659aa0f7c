/** Environment variables read by {@link loadConfig}, and the field each sets. */
export const ENV_OVERRIDES: Readonly<Record<string, string>> = {
  PORT: 'port',
  HOST: 'host',
  UPSTREAM_URL: 'upstream.url',
  UPSTREAM_API_KEY: 'upstream.apiKey',
  REDIS_URL: 'redis.url',
  TIDEGATE_MAX_BUFFERED_BYTES: 'stream.maxBufferedBytes',
  TIDEGATE_OVERFLOW: 'stream.overflow',
  TIDEGATE_RELAY: 'stream.relay',
  TIDEGATE_STALL_TIMEOUT_MS: 'stream.stallTimeoutMs',
  TIDEGATE_HEARTBEAT_MS: 'stream.heartbeatMs',
  TIDEGATE_KERNEL_UNSENT_BYTES: 'stream.kernelUnsentBytes',
  TIDEGATE_KERNEL_RECEIVE_BYTES: 'upstream.kernelReceiveBytes',
  TIDEGATE_FIRST_BYTE_TIMEOUT_MS: 'timeouts.firstByteMs',
  TIDEGATE_IDLE_TIMEOUT_MS: 'timeouts.idleMs',
  TIDEGATE_TOTAL_TIMEOUT_MS: 'timeouts.totalMs',
  TIDEGATE_SHUTDOWN_GRACE_MS: 'shutdown.graceMs',
  TIDEGATE_WARMUP_STREAMS: 'warmup.streams',
  TIDEGATE_CORS_ORIGINS: 'cors.origins',
};

/** Dotted fields whose string values (environment) are comma-separated lists. */
export const LIST_FIELDS: ReadonlySet<string> = new Set(['cors.origins']);

/** Dotted fields whose string values (environment, flags) are decimal numbers ({@link parseDecimal}). */
export const NUMERIC_FIELDS: ReadonlySet<string> = new Set(['port', 'stream.maxBufferedBytes', 'stream.stallTimeoutMs', 'stream.heartbeatMs', 'stream.kernelUnsentBytes', 'upstream.kernelReceiveBytes', 'timeouts.firstByteMs', 'timeouts.idleMs', 'timeouts.totalMs', 'shutdown.graceMs', 'warmup.streams']);

/** A decimal number: digits, an optional fraction and exponent, an optional sign. */
const DECIMAL = /^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * The finite number a flag or an environment variable spells in decimal (`8080`, `1.5`, `1e3`;
 * blanks around it are ignored), or `undefined` for anything else: `Number` would also take
 * `0x10`, `0b1`, `0o7` and `Infinity`, and read an empty string as 0.
 */
export function parseDecimal(text: string): number | undefined {
  const trimmed = text.trim();
  const n = DECIMAL.test(trimmed) ? Number(trimmed) : Number.NaN;
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Sets `path` (dotted) in `target`, creating objects on the way; numeric fields are read with
 * {@link parseDecimal} (anything else becomes `NaN`, which the schema refuses), list fields split
 * on commas.
 */
export function setField(target: Record<string, unknown>, path: string, value: string | number | boolean | readonly string[] | undefined): void {
  if (value === undefined || value === '') return;
  const keys = path.split('.');
  let node = target;
  for (const k of keys.slice(0, -1)) {
    const next = node[k];
    node = (typeof next === 'object' && next !== null ? next : (node[k] = {})) as Record<string, unknown>;
  }
  let v: unknown = value;
  if (typeof value === 'string' && NUMERIC_FIELDS.has(path)) v = parseDecimal(value) ?? Number.NaN;
  else if (typeof value === 'string' && LIST_FIELDS.has(path)) v = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  node[keys[keys.length - 1]] = v;
}

