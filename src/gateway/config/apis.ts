/**
 * The provider APIs a route can serve, one row each: the provider whose key, headers and error
 * shape it uses, its default path and methods, and whether it streams. A route names its API
 * (`api`), or gets the one its path ends with ({@link inferApi}).
 */

/** The APIs a route can serve (`sse`: a passthrough route's generic event stream). */
export const ROUTE_APIS = ['chat', 'responses', 'completions', 'models', 'embeddings', 'messages', 'count_tokens', 'sse'] as const;

/** One of {@link ROUTE_APIS}. */
export type RouteApi = (typeof ROUTE_APIS)[number];

/** What a route of one API is. */
export interface RouteApiSpec {
  readonly provider: 'openai' | 'anthropic' | 'passthrough';
  /** The provider's path, also the gateway's default path for it. */
  readonly path: string;
  readonly methods: readonly ('GET' | 'POST')[];
  /** `stream: true` in the body asks for an event stream; otherwise the answer is one whole body. */
  readonly streams: boolean;
  /** What the gateway does with it, for `--help`, the 404 body and the docs. */
  readonly summary: string;
}

/** The API table. Adding an API is one row here (and its adapter in `gateway/route-adapters.ts` when it streams its own protocol). */
export const API_SPECS: Readonly<Record<RouteApi, RouteApiSpec>> = {
  chat: { provider: 'openai', path: '/v1/chat/completions', methods: ['POST'], streams: true, summary: 'OpenAI Chat Completions, streaming or not' },
  responses: { provider: 'openai', path: '/v1/responses', methods: ['POST'], streams: true, summary: 'OpenAI Responses, streaming or not' },
  completions: { provider: 'openai', path: '/v1/completions', methods: ['POST'], streams: true, summary: 'OpenAI legacy completions, streaming or not' },
  models: { provider: 'openai', path: '/v1/models', methods: ['GET'], streams: false, summary: 'OpenAI model list, and one model below it (JSON)' },
  embeddings: { provider: 'openai', path: '/v1/embeddings', methods: ['POST'], streams: false, summary: 'OpenAI embeddings (JSON)' },
  messages: { provider: 'anthropic', path: '/v1/messages', methods: ['POST'], streams: true, summary: 'Anthropic Messages, streaming or not' },
  count_tokens: { provider: 'anthropic', path: '/v1/messages/count_tokens', methods: ['POST'], streams: false, summary: 'Anthropic token counting (JSON)' },
  sse: { provider: 'passthrough', path: '/', methods: ['GET', 'POST'], streams: true, summary: 'any SSE upstream, relayed as it comes' },
};

/** The APIs served by default, in this order. */
export const DEFAULT_APIS: readonly RouteApi[] = ['chat', 'responses', 'completions', 'models', 'embeddings', 'messages', 'count_tokens'];

/**
 * The API of a route that did not name one: a passthrough route's is `sse`; otherwise the
 * provider's API whose path `path` ends with (`/proxy/v1/responses` → `responses`), else the
 * provider's main one (`chat`, `messages`).
 */
export function inferApi(provider: RouteApiSpec['provider'], path: string): RouteApi {
  if (provider === 'passthrough') return 'sse';
  let best: RouteApi | undefined;
  for (const api of ROUTE_APIS) {
    const spec = API_SPECS[api];
    if (spec.provider !== provider || !path.endsWith(spec.path)) continue;
    if (best === undefined || spec.path.length > API_SPECS[best].path.length) best = api;
  }
  return best ?? (provider === 'openai' ? 'chat' : 'messages');
}
