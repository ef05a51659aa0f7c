import { z } from 'zod';
import { resolveResume, resumeSchema, type ResumeSettings } from '../resume/settings';
import { headerName } from './fields';
import type { GatewayConfig } from './schema';
import { DEFAULT_POLICY, DEFAULT_RETRY, DEFAULT_TIMEOUTS, policyShape, retryShape, timeoutsShape, type RetrySettings, type StreamPolicy, type UpstreamTimeouts } from './stream';

/** One route of the `routes` list. */
export const routeSchema = z.object({
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
  /**
   * Follow the upstream's 3xx answers (default `false`: a redirect answers the client 502
   * `ERR_TIDEGATE_UPSTREAM_REDIRECT` and nothing is sent where it points).
   */
  followRedirects: z.boolean().default(false),
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

/** One configured route. */
export type RouteConfig = z.infer<typeof routeSchema>;

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
  followRedirects: boolean;
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
  { path: '/v1/chat/completions', provider: 'openai', followRedirects: false, stream: true, resumable: false, policy: {}, timeouts: {}, retry: {} },
  { path: '/v1/messages', provider: 'anthropic', followRedirects: false, stream: true, resumable: false, policy: {}, timeouts: {}, retry: {} },
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
    followRedirects: r.followRedirects,
    stream: r.stream,
    resumable: r.resumable,
    terminator: r.terminator,
    resume: resolveResume(r.resume),
    policy: { ...DEFAULT_POLICY, ...config.stream, ...r.policy },
    timeouts: { ...DEFAULT_TIMEOUTS, ...config.timeouts, ...r.timeouts },
    retry: { ...DEFAULT_RETRY, ...config.retry, ...r.retry },
  }));
}
