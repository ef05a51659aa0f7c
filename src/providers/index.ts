// Public exports of src/http/providers (re-exports only).
export { adaptFrames, adaptProvider } from './adapt';
export { anthropicAdapter, DEFAULT_ANTHROPIC_VERSION } from './anthropic';
export { codeOf, httpStatusOf } from './errors-http';
export { openaiAdapter } from './openai';
export { responsesAdapter } from './responses';
export { createPassthroughAdapter, passthroughAdapter } from './passthrough';
export type { PassthroughTerminator } from './passthrough';
export type { GatewayEvent, ProviderAdapter, ProviderName, TokenUsage } from './types';
