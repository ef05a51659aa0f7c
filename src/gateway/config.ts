import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { DEFAULT_MAX_BODY_BYTES } from '../http/errors';
import { redisSchema, resolveResume, resumeSchema, resumeStoreSchema, type ResumeSettings } from './resume/settings';

const int = (min: number): z.ZodNumber => z.number().int().min(min);

/** Stream policy fields (bytes, ms); each route may override any of them. */
const policyShape = {
  /** Events the bridge requests per batch. */
  prefetch: int(1).max(4096),
  /** Per-stream byte budget: chain buffers + bridge + `res.writableLength`, bytes. */
  maxBufferedBytes: int(1024),
  /** `pause`: demand pauses the upstream. `terminate`: read the upstream at full speed into the budget, end with ERR_TIDEGATE_OVERFLOW when spent. */
  overflow: z.enum(['pause', 'terminate']),
  /** End a stream whose client accepted nothing for this long, ms (0 disables). */
  stallTimeoutMs: int(0),
  /** `: ping` after this much silence, ms (0 disables). */
  heartbeatMs: int(0),
  /**
   * Streaming requests: commit `200 text/event-stream` and start `: ping` heartbeats when the
   * upstream's status line has not arrived this long after the request, ms (0 = off: headers wait
   * for the upstream, so its errors keep their HTTP status). After an early commit an upstream
   * error (a 429, a 5xx after retries) reaches the client as the provider's SSE error event.
   */
  earlyCommitMs: int(0),
  /** Max bytes of one upstream SSE event. */
  maxEventBytes: int(1024),
  /** `limitRate(n)` on the events: at most n requested upstream at once (0 = off). */
  limitRate: int(0),
  /**
   * `bytes`: forward each upstream event's own bytes in frames, decoding only what the provider
   * adapter must see (used when the route has no `limitRate` and no user policy). `events`:
   * decode and re-encode every event.
   */
  relay: z.enum(['bytes', 'events']),
};

/** Stream policy defaults. */
export const DEFAULT_POLICY: StreamPolicy = {
  prefetch: 16,
  maxBufferedBytes: 256 * 1024,
  overflow: 'pause',
  stallTimeoutMs: 30_000,
  heartbeatMs: 15_000,
  earlyCommitMs: 0,
  maxEventBytes: 1024 * 1024,
  limitRate: 0,
  relay: 'bytes',
};

/** Upstream timeouts, ms (0 disables one). */
const timeoutsShape = {
  /** A new upstream connection must be up within this. */
  connectMs: int(0),
  /** The upstream's first body byte must arrive within this of the request (models think). */
  firstByteMs: int(0),
  /** Longest silence between upstream chunks while the client reads. */
  idleMs: int(0),
  /** Longest life of one request, from its arrival. */
  totalMs: int(0),
};

/** Timeout defaults, ms. */
export const DEFAULT_TIMEOUTS: UpstreamTimeouts = { connectMs: 10_000, firstByteMs: 60_000, idleMs: 120_000, totalMs: 600_000 };

const retryShape = {
  /** Attempts in all, the first included (1 = no retry). */
  maxAttempts: int(1).max(10),
  /** First backoff ceiling, ms (doubles per attempt, full jitter). */
  baseDelayMs: int(0),
  /** Largest backoff, ms. */
  maxDelayMs: int(0),
  /** A longer `Retry-After` is not waited for, ms. */
  maxRetryAfterMs: int(0),
  /**
   * Resumable routes: reconnects of one stream in all (delivered events do not reset it); the
   * delay grows with each (from `baseDelayMs`, never below the upstream's `retry:`). Once spent
   * the stream ends with an `ERR_TIDEGATE_UPSTREAM_RESET` error event. 0: never reconnect.
   */
  maxReconnects: int(0).max(1000),
};

/** Retry defaults. */
export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 8000, maxRetryAfterMs: 30_000, maxReconnects: 10 };

/** Admission limits of the gateway, resolved. */
export interface AdmissionLimits {
  maxRequestBodyBytes: number;
  requestBodyTimeoutMs: number;
  headersTimeoutMs: number;
  maxConnections: number;
  maxStreams: number;
  maxStreamsPerClient: number;
  clientAddressHeader?: string | undefined;
  retryAfterSeconds: number;
}

/** Admission defaults: 4 MiB bodies within 30 s, headers within 30 s, 10000 connections, 5000 streams, 100 per client, `Retry-After: 1`. */
export const DEFAULT_LIMITS: Readonly<Omit<AdmissionLimits, 'clientAddressHeader'>> = {
  maxRequestBodyBytes: 4 * 1024 * 1024,
  requestBodyTimeoutMs: 30_000,
  headersTimeoutMs: 30_000,
  maxConnections: 10_000,
  maxStreams: 5_000,
  maxStreamsPerClient: 100,
  retryAfterSeconds: 1,
};

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'not an HTTP header name')
  .transform((s) => s.toLowerCase());

const routeSchema = z.object({
  /** Path the gateway serves, e.g. `/v1/chat/completions`. */
  path: z.string().startsWith('/', 'must start with /'),
  provider: z.enum(['openai', 'anthropic', 'passthrough']),
  /** Methods served; default `POST` for openai/anthropic, `GET` and `POST` for passthrough. */
  methods: z.array(z.enum(['GET', 'POST'])).min(1).optional(),
  /** Full upstream URL; default: `upstream.url` + `upstreamPath`. */
  url: z.string().url().optional(),
  /** Path on `upstream.url` when `url` is not set; default: the route's `path`. */
  upstreamPath: z.string().startsWith('/', 'must start with /').optional(),
  /** Upstream credential for this route; default `upstream.apiKey`. */
  apiKey: z.string().optional(),
  /** Client request headers forwarded upstream (replaces the provider's default list). */
  forwardHeaders: z.array(headerName).optional(),
  /** Static headers added to the upstream request. */
  headers: z.record(z.string(), z.string()).optional(),
  /** `false`: ask the upstream for a non-stream answer and return it as one JSON (openai, anthropic). */
  stream: z.boolean().default(true),
  /** Passthrough only: reconnect a dropped upstream with `Last-Event-ID` (resumable relay, docs/gateway.md). */
  resumable: z.boolean().default(false),
  /** Passthrough only: the event that ends the stream; EOF without it is ERR_TIDEGATE_UPSTREAM_TRUNCATED. */
  terminator: z.object({ event: z.string().optional(), data: z.string().optional() }).optional(),
  /**
   * Resumable streams (docs/resume.md): `true`, or `{ store, windowBytes, lingerMs, retentionMs }`
   * (defaults `memory`, 1 MiB, 30 s, 5 min). Off when absent.
   */
  resume: resumeSchema.optional(),
  policy: z.object(policyShape).partial().strict().default({}),
  timeouts: z.object(timeoutsShape).partial().strict().default({}),
  retry: z.object(retryShape).partial().strict().default({}),
}).strict();

/** The gateway's configuration schema (zod), validated at start; a bad value names its field. */
export const configSchema = z
  .object({
    port: int(0).max(65535).default(8080),
    host: z.string().min(1).default('127.0.0.1'),
    upstream: z
      .object({
        /** Base URL of the upstream server; absent = the embedded simulator. */
        url: z.string().url().optional(),
        /** Sent upstream as `Authorization: Bearer …` (openai, passthrough) or `x-api-key` (anthropic); never taken from the client. */
        apiKey: z.string().optional(),
        /** Static headers added to every upstream request. */
        headers: z.record(z.string(), z.string()).default({}),
        /**
         * Most bytes of an upstream body the gateway reads whole, bytes (default 8 MiB, at least
         * 1024): a non-stream answer; an error body is read up to the lower of this and 64 KiB.
         * A longer body aborts the upstream request and answers 502
         * `ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE`. Event streams are bounded by `stream.*` instead.
         */
        maxBodyBytes: int(1024).default(DEFAULT_MAX_BODY_BYTES),
      })
      .strict()
      .prefault({}),
    /** Stream policy defaults for every route. */
    stream: z.object(policyShape).partial().strict().default({}),
    timeouts: z.object(timeoutsShape).partial().strict().default({}),
    retry: z.object(retryShape).partial().strict().default({}),
    /** Routes; default: openai on /v1/chat/completions and anthropic on /v1/messages. */
    routes: z.array(routeSchema).optional(),
    /** Gateway-wide bounds of the resume stores. */
    resumeStore: resumeStoreSchema,
    /** Redis of the `redis` resume store (`REDIS_URL`); never needed otherwise. */
    redis: redisSchema,
    shutdown: z
      .object({
        /** Streams may finish for this long after SIGTERM, ms; then they get ERR_TIDEGATE_SHUTDOWN. */
        graceMs: int(0).default(10_000),
      })
      .strict()
      .prefault({}),
    /** Admission control: what a client may hold before it is refused (docs/gateway.md, "Running it in public"). */
    limits: z
      .object({
        /** A request body larger than this is refused with 413 once its bytes pass it (or at once by `Content-Length`), bytes. */
        maxRequestBodyBytes: int(1).default(DEFAULT_LIMITS.maxRequestBodyBytes),
        /** A request body must arrive within this of its headers, else 408 and the connection is closed, ms (0 disables). */
        requestBodyTimeoutMs: int(0).default(DEFAULT_LIMITS.requestBodyTimeoutMs),
        /** Request headers must arrive within this of the connection (or of the previous response), ms (Node's `server.headersTimeout`). */
        headersTimeoutMs: int(1).default(DEFAULT_LIMITS.headersTimeoutMs),
        /** Open client connections; a request on one past this gets 503 and its connection is closed (0 = no cap). */
        maxConnections: int(0).default(DEFAULT_LIMITS.maxConnections),
        /** Concurrent streams over the gateway, from admission to the stream's end; past it 503 (0 = no cap). */
        maxStreams: int(0).default(DEFAULT_LIMITS.maxStreams),
        /** Concurrent streams of one client (its credential's hash, else its address); past it 429 (0 = no cap). */
        maxStreamsPerClient: int(0).default(DEFAULT_LIMITS.maxStreamsPerClient),
        /**
         * A header carrying the client's address set by a trusted proxy, e.g. `x-forwarded-for`;
         * its right-most entry is used. Absent (default): the header is ignored and the socket's
         * peer address is the client's.
         */
        clientAddressHeader: headerName.optional(),
        /** `Retry-After` of a 429 or 503 refusal, seconds. */
        retryAfterSeconds: int(1).default(DEFAULT_LIMITS.retryAfterSeconds),
      })
      .strict()
      .prefault({}),
    playground: z
      .object({
        /**
         * Serve the live backpressure playground at `/playground`. Default (unset): only when
         * `host` is a loopback address (127.0.0.0/8, ::1, localhost); `true` serves it on any address.
         */
        enabled: z.boolean().optional(),
        /** Telemetry subscribers of one run at once; more get 429 with `Retry-After`. */
        maxTelemetrySubscribers: int(1).max(100_000).default(16),
        /** Unfinished runs per client address at once; more get 429 with `Retry-After`. */
        maxRunsPerClient: int(1).max(1000).default(2),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        enabled: z.boolean().default(true),
        path: z.string().startsWith('/').default('/metrics'),
      })
      .strict()
      .prefault({}),
    debug: z
      .object({
        /**
         * Serve `GET /debug/streams`: every live stream's demand and buffers as JSON (off by
         * default: it names streams and routes to whoever can reach the port).
         */
        streams: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    simulator: z
      .object({
        tokensPerSecond: z.number().positive().default(50),
        ttftMs: int(0).default(300),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** A validated gateway configuration, as written (route values not yet merged with the defaults). */
export type GatewayConfig = z.infer<typeof configSchema>;
/** One configured route. */
export type RouteConfig = z.infer<typeof routeSchema>;
/** Stream policy of one route, resolved. */
export type StreamPolicy = { [K in keyof typeof policyShape]: z.infer<(typeof policyShape)[K]> };
/** Upstream timeouts of one route, resolved, ms. */
export type UpstreamTimeouts = { [K in keyof typeof timeoutsShape]: number };
/** Retry settings of one route, resolved. */
export type RetrySettings = { [K in keyof typeof retryShape]: number };

/** A route with every setting resolved (route over global over defaults). */
export interface ResolvedRoute {
  path: string;
  provider: RouteConfig['provider'];
  methods: ('GET' | 'POST')[];
  /** Full upstream URL; `undefined` until the upstream base is known (simulator). */
  url: string | undefined;
  apiKey: string | undefined;
  /** `upstream.maxBodyBytes`: most bytes of a whole upstream body read (non-stream answers, error bodies). */
  maxBodyBytes: number;
  forwardHeaders: string[] | undefined;
  headers: Record<string, string>;
  stream: boolean;
  resumable: boolean;
  terminator: { event?: string | undefined; data?: string | undefined } | undefined;
  /** Resume settings; `undefined` when the route's streams are not resumable. */
  resume: ResumeSettings | undefined;
  policy: StreamPolicy;
  timeouts: UpstreamTimeouts;
  retry: RetrySettings;
}

/** The default routes when none are configured. */
export const DEFAULT_ROUTES: readonly RouteConfig[] = [
  { path: '/v1/chat/completions', provider: 'openai', stream: true, resumable: false, policy: {}, timeouts: {}, retry: {} },
  { path: '/v1/messages', provider: 'anthropic', stream: true, resumable: false, policy: {}, timeouts: {}, retry: {} },
];

/**
 * Resolves the routes of `config`: each route's policy, timeouts and retry over the global
 * ones over the defaults; `url` from `upstreamBase` + path when not set.
 */
export function resolveRoutes(config: GatewayConfig, upstreamBase: string | undefined): ResolvedRoute[] {
  return (config.routes ?? DEFAULT_ROUTES).map((r) => ({
    path: r.path,
    provider: r.provider,
    methods: r.methods ?? (r.provider === 'passthrough' ? ['GET', 'POST'] : ['POST']),
    url: r.url ?? (upstreamBase === undefined ? undefined : new URL((r.upstreamPath ?? r.path).slice(1), upstreamBase.endsWith('/') ? upstreamBase : `${upstreamBase}/`).toString()),
    apiKey: r.apiKey ?? config.upstream.apiKey,
    maxBodyBytes: config.upstream.maxBodyBytes,
    forwardHeaders: r.forwardHeaders,
    headers: { ...config.upstream.headers, ...(r.headers ?? {}) },
    stream: r.stream,
    resumable: r.resumable,
    terminator: r.terminator,
    resume: resolveResume(r.resume),
    policy: { ...DEFAULT_POLICY, ...config.stream, ...r.policy },
    timeouts: { ...DEFAULT_TIMEOUTS, ...config.timeouts, ...r.timeouts },
    retry: { ...DEFAULT_RETRY, ...config.retry, ...r.retry },
  }));
}

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
  TIDEGATE_FIRST_BYTE_TIMEOUT_MS: 'timeouts.firstByteMs',
  TIDEGATE_IDLE_TIMEOUT_MS: 'timeouts.idleMs',
  TIDEGATE_TOTAL_TIMEOUT_MS: 'timeouts.totalMs',
  TIDEGATE_SHUTDOWN_GRACE_MS: 'shutdown.graceMs',
};

const NUMERIC = new Set(['port', 'stream.maxBufferedBytes', 'stream.stallTimeoutMs', 'stream.heartbeatMs', 'timeouts.firstByteMs', 'timeouts.idleMs', 'timeouts.totalMs', 'shutdown.graceMs']);

/** Sets `path` (dotted) in `target`, creating objects on the way; numeric fields are converted with `Number`. */
export function setField(target: Record<string, unknown>, path: string, value: string | number | boolean | undefined): void {
  if (value === undefined || value === '') return;
  const keys = path.split('.');
  let node = target;
  for (const k of keys.slice(0, -1)) {
    const next = node[k];
    node = (typeof next === 'object' && next !== null ? next : (node[k] = {})) as Record<string, unknown>;
  }
  node[keys[keys.length - 1]] = typeof value === 'string' && NUMERIC.has(path) ? Number(value) : value;
}

/** Inputs of {@link loadConfig}, lowest precedence first: file, environment, overrides (CLI flags). */
export interface LoadConfigOptions {
  /** A YAML or JSON file. */
  file?: string | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** Dotted field → value (CLI flags), applied last. */
  overrides?: Readonly<Record<string, string | number | boolean | undefined>> | undefined;
  /** Routes appended to the configured (or default) ones, e.g. from `--passthrough`. */
  extraRoutes?: readonly Record<string, unknown>[] | undefined;
}

/**
 * Builds the configuration from defaults < file < environment < overrides and validates it.
 * Throws {@link ConfigError} naming the bad field (and the file).
 */
export function loadConfig(options: LoadConfigOptions = {}): GatewayConfig {
  const raw = (options.file ? readConfigFile(options.file) : {}) as Record<string, unknown>;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`invalid ${options.file}: (root): expected an object`);
  const env = options.env ?? {};
  const origins: Record<string, string> = {};
  for (const [name, field] of Object.entries(ENV_OVERRIDES)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (NUMERIC.has(field) && (value.trim() === '' || !Number.isFinite(Number(value)))) {
      throw new ConfigError(`invalid ${name} (${field}): expected a number, got ${JSON.stringify(value)}`);
    }
    setField(raw, field, value);
    origins[field] = `${name}=${JSON.stringify(value)}`;
  }
  for (const [field, value] of Object.entries(options.overrides ?? {})) {
    if (value === undefined) continue;
    setField(raw, field, value);
    delete origins[field];
  }
  if (options.extraRoutes && options.extraRoutes.length > 0) {
    const base = Array.isArray(raw.routes) ? (raw.routes as unknown[]) : DEFAULT_ROUTES.map((r) => ({ path: r.path, provider: r.provider }));
    raw.routes = [...base, ...options.extraRoutes];
    options.extraRoutes.forEach((r, k) => (origins[`routes.${base.length + k}`] = `--passthrough ${String(r.path)}=${String(r.url)}`));
  }
  return parseConfig(raw, options.file ? `config file ${options.file}` : 'configuration', origins);
}
