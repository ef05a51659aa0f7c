import { z } from 'zod';
import { API_SPECS, DEFAULT_APIS, inferApi, ROUTE_APIS, type RouteApi } from './apis';
import { resolveResume, resumeSchema, type ResumeSettings } from '../resume/settings';
import { headerName, httpUrl } from './fields';
import type { GatewayConfig } from './schema';
import { DEFAULT_POLICY, DEFAULT_RETRY, DEFAULT_TIMEOUTS, policyShape, retryShape, timeoutsShape, type RetrySettings, type StreamPolicy, type UpstreamTimeouts } from './stream';

/** One route of the `routes` list. */
export const routeSchema = z.object({
  /** Path the gateway serves, e.g. `/v1/chat/completions`. */
  path: z.string().startsWith('/', 'must start with /'),
  provider: z.enum(['openai', 'anthropic', 'passthrough']),
  /**
   * The provider API served (`chat`, `responses`, `completions`, `models`, `embeddings`,
   * `messages`, `count_tokens`; `sse` for passthrough); default: the one the path ends with.
   */
  api: z.enum(ROUTE_APIS).optional(),
  /** Methods served; default the API's (`GET` for `models`, `GET` and `POST` for passthrough, else `POST`). */
  methods: z.array(z.enum(['GET', 'POST'])).min(1).optional(),
  /** Full upstream URL; default: `upstream.url` + `upstreamPath`. */
  url: httpUrl.optional(),
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
}).strict().superRefine((r, ctx) => {
  if (r.api !== undefined && API_SPECS[r.api].provider !== r.provider) {
    ctx.addIssue({ code: 'custom', path: ['api'], message: `api ${r.api} is served by provider ${API_SPECS[r.api].provider}, not ${r.provider}` });
  }
  if (r.provider === 'passthrough') return;
  // An openai or anthropic route would take them and ignore them: say so instead.
  if (r.resumable) ctx.addIssue({ code: 'custom', path: ['resumable'], message: `passthrough routes only (provider ${r.provider}: use resume for resumable streams)` });
  if (r.terminator !== undefined) ctx.addIssue({ code: 'custom', path: ['terminator'], message: `passthrough routes only (provider ${r.provider} ends its streams as its protocol does)` });
});

/** One configured route. */
export type RouteConfig = z.infer<typeof routeSchema>;

/** A route with every setting resolved (route over global over defaults). */
export interface ResolvedRoute {
  path: string;
  provider: RouteConfig['provider'];
  /** The provider API it serves (see `API_SPECS`). */
  api: RouteApi;
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

/** The default routes when none are configured: every API of `DEFAULT_APIS` on its provider's path. */
export const DEFAULT_ROUTES: readonly RouteConfig[] = DEFAULT_APIS.map((api) => ({
  path: API_SPECS[api].path,
  provider: API_SPECS[api].provider,
  api,
  followRedirects: false,
  stream: true,
  resumable: false,
  policy: {},
  timeouts: {},
  retry: {},
}));

/**
 * Resolves the routes of `config`: each route's policy, timeouts and retry over the global
 * ones over the defaults; `url` from `upstreamBase` + path when not set.
 */
export function resolveRoutes(config: GatewayConfig, upstreamBase: string | undefined): ResolvedRoute[] {
  return (config.routes ?? DEFAULT_ROUTES).map((r) => {
    const api = r.api ?? inferApi(r.provider, (r.upstreamPath ?? r.path).split('?')[0]);
    return resolveRoute(config, r, api, upstreamBase);
  });
}

/**
 * `base` (`upstream.url`) with `upstreamPath` appended to its path, never resolved against it:
 * `http://h/base?api-version=1` + `/v1/models` → `http://h/base/v1/models?api-version=1`. The
 * base's userinfo and query stay; a query on `upstreamPath` is added to the base's, its values
 * replacing the base's for the names it sets.
 */
export function appendUpstreamPath(base: string, upstreamPath: string): string {
  const url = new URL(base);
  const q = upstreamPath.indexOf('?');
  const path = q < 0 ? upstreamPath : upstreamPath.slice(0, q);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  if (q >= 0) {
    const own = new URLSearchParams(upstreamPath.slice(q + 1));
    for (const name of new Set(own.keys())) url.searchParams.delete(name);
    for (const [name, value] of own) url.searchParams.append(name, value);
  }
  return url.toString();
}

function resolveRoute(config: GatewayConfig, r: RouteConfig, api: RouteApi, upstreamBase: string | undefined): ResolvedRoute {
  return {
    path: r.path,
    provider: r.provider,
    api,
    methods: r.methods ?? [...API_SPECS[api].methods],
    url: r.url ?? (upstreamBase === undefined ? undefined : appendUpstreamPath(upstreamBase, r.upstreamPath ?? r.path)),
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
  };
}
