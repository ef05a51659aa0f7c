import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ENV_OVERRIDES, NUMERIC_FIELDS, parseDecimal, setField } from './env';
import { DEFAULT_ROUTES } from './routes';
import { configSchema, type GatewayConfig } from './schema';

/** Raised when the configuration is invalid; the message names each bad field. */
export class ConfigError extends Error {
  readonly code = 'ERR_TIDEGATE_CONFIG';
}

/** Validates a raw configuration object; throws {@link ConfigError} naming the fields. */
export function parseConfig(raw: unknown, source = 'configuration', origins: Readonly<Record<string, string>> = {}): GatewayConfig {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const details = result.error.issues
    .map((i) => {
      const keys = (i as { keys?: string[] }).keys;
      const field = [...i.path, ...(i.code === 'unrecognized_keys' && keys ? [keys.join(', ')] : [])].join('.') || '(root)';
      // Name where a value came from when it was not the file: `PORT=abc`, `--passthrough x=y`.
      const origin = Object.entries(origins).find(([prefix]) => field === prefix || field.startsWith(`${prefix}.`))?.[1];
      return `${field}: ${i.message}${origin ? ` (from ${origin})` : ''}`;
    })
    .join('; ');
  throw new ConfigError(`invalid ${source}: ${details}`);
}

/** Reads a YAML or JSON config file (YAML is a superset of JSON); throws {@link ConfigError}. */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  try {
    return parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid YAML or JSON: ${(err as Error).message}`);
  }
}

/** Inputs of {@link loadConfig}, lowest precedence first: file, environment, overrides (CLI flags). */
export interface LoadConfigOptions {
  /** A YAML or JSON file. */
  file?: string | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** Dotted field → value (CLI flags), applied last. */
  overrides?: Readonly<Record<string, string | number | boolean | readonly string[] | undefined>> | undefined;
  /** Dotted field → how its override was given (`--overflow drop`), named in an error on that field. */
  overrideOrigins?: Readonly<Record<string, string>> | undefined;
  /** Routes appended to the configured (or default) ones, e.g. from `--passthrough`. */
  extraRoutes?: readonly Record<string, unknown>[] | undefined;
}

const UPSTREAM_URL_FIELD = 'upstream.url';

/**
 * An empty upstream URL is refused, not taken as unset: unset, the CLI runs its embedded
 * simulator, and a variable a deployment forgot to fill (`UPSTREAM_URL=${UPSTREAM_URL}`) must not
 * put simulated answers in front of its clients.
 */
function emptyUpstreamUrl(what: string): ConfigError {
  return new ConfigError(`${what} (upstream.url): give the upstream's URL, or leave it unset to run the embedded simulator`);
}

/**
 * Builds the configuration from defaults < file < environment < overrides and validates it.
 * An empty `UPSTREAM_URL` or upstream override is refused (other empty variables count as unset).
 * Throws {@link ConfigError} naming the bad field (and the file).
 */
export function loadConfig(options: LoadConfigOptions = {}): GatewayConfig {
  const raw = (options.file ? readConfigFile(options.file) : {}) as Record<string, unknown>;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`invalid ${options.file}: (root): expected an object`);
  const env = options.env ?? {};
  const origins: Record<string, string> = {};
  for (const [name, field] of Object.entries(ENV_OVERRIDES)) {
    const value = env[name];
    if (value === '' && field === UPSTREAM_URL_FIELD) throw emptyUpstreamUrl(`${name} is set but empty`);
    if (value === undefined || value === '') continue;
    if (NUMERIC_FIELDS.has(field) && parseDecimal(value) === undefined) {
      throw new ConfigError(`invalid ${name} (${field}): expected a decimal number, got ${JSON.stringify(value)}`);
    }
    setField(raw, field, value);
    origins[field] = `${name}=${JSON.stringify(value)}`;
  }
  for (const [field, value] of Object.entries(options.overrides ?? {})) {
    if (value === '' && field === UPSTREAM_URL_FIELD) throw emptyUpstreamUrl(`${(options.overrideOrigins?.[field] ?? field).trim()} is empty`);
    if (value === undefined) continue;
    setField(raw, field, value);
    const origin = options.overrideOrigins?.[field];
    if (origin === undefined) delete origins[field];
    else origins[field] = origin;
  }
  if (options.extraRoutes && options.extraRoutes.length > 0) {
    const base = Array.isArray(raw.routes) ? (raw.routes as unknown[]) : DEFAULT_ROUTES.map((r) => ({ path: r.path, provider: r.provider }));
    raw.routes = [...base, ...options.extraRoutes];
    options.extraRoutes.forEach((r, k) => (origins[`routes.${base.length + k}`] = `--passthrough ${String(r.path)}=${String(r.url)}`));
  }
  return parseConfig(raw, options.file ? `config file ${options.file}` : 'configuration', origins);
}
