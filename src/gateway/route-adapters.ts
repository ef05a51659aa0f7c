import { anthropicAdapter } from '../providers/anthropic';
import { openaiAdapter } from '../providers/openai';
import { createPassthroughAdapter } from '../providers/passthrough';
import { responsesAdapter } from '../providers/responses';
import type { ProviderAdapter } from '../providers/types';
import type { ResolvedRoute, RouteApi } from './config';

/**
 * The adapter of each API: how its events are read and its errors written. The JSON APIs
 * (`models`, `embeddings`, `count_tokens`) never stream; their provider's adapter gives them
 * its key header, its forwarded headers and its error shape.
 */
const ADAPTERS: Readonly<Record<Exclude<RouteApi, 'sse'>, ProviderAdapter>> = {
  chat: openaiAdapter,
  // Legacy completions: the same `data:` chunks, `[DONE]` and error frames (text in `choices[0].text`).
  completions: openaiAdapter,
  responses: responsesAdapter,
  models: openaiAdapter,
  embeddings: openaiAdapter,
  messages: anthropicAdapter,
  count_tokens: anthropicAdapter,
};

/** The adapter a route relays with: its API's, or a passthrough adapter with the route's terminator. */
export function adapterFor(route: Pick<ResolvedRoute, 'api' | 'terminator'>): ProviderAdapter {
  return route.api === 'sse' ? createPassthroughAdapter(route.terminator) : ADAPTERS[route.api];
}
