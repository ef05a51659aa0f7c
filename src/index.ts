/**
 * tidegate: end-to-end backpressure for LLM token streams.
 *
 * `upstream (node-fetch) → Flow<Uint8Array> → sseDecode → provider adapter → policy operators
 * → sseEncode → Express demand bridge → socket`
 *
 * This entry is the library: Flow and its operators, the SSE codec, the Express demand bridge,
 * the SSE client, and the upstream request and provider adapters. It loads rxjs and node-fetch
 * only. The gateway (winston, prom-client, zod, yaml) is `tidegate/gateway`, the simulated
 * upstream `tidegate/simulator` and the playground `tidegate/playground`.
 */
export * from './errors';

export { Flow } from './flow/flow';
export type { FlowOperator, FlowPipeable } from './flow/flow';
export type { FlowContext, FlowObserver, FlowSubscription, Publisher, Subscriber, Subscription } from './flow/types';
export { UNBOUNDED } from './flow/demand';
export { ByteBudget, utf8Size } from './flow/budget';
export { createFlow } from './flow/sources/create';
export type { CreateFlowOptions, CreateOverflowStrategy, FlowSink } from './flow/sources/create';
export { DEFAULT_GENERATE_SLICE, generate, IllegalSinkStateError } from './flow/sources/generate';
export type { GenerateOptions, StatefulGenerator, SynchronousSink } from './flow/sources/generate';
export { fromIterable } from './flow/sources/iterable';
export { fromReadable } from './flow/sources/readable';
export type { FromReadableOptions } from './flow/sources/readable';
export { fromAsyncIterable, fromReadableStream } from './flow/sources/readable-stream';
export { liftRx } from './flow/lift-rx';
export * from './flow/operators';

export * from './sse';
export * from './express';
export * from './client';

export { UpstreamEncodingError, UpstreamHttpError, UpstreamRedirectError, UpstreamResetError, UpstreamUnreachableError, UpstreamUpgradeError, UpstreamStreamError, UpstreamTruncatedError } from './http/errors';
export { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_FIRST_BYTE_TIMEOUT_MS, fetchUpstream, openUpstreamStream } from './http/request';
export type { UpstreamBody, UpstreamRequest, UpstreamStream } from './http/request';
export type { FollowRedirects } from './http/call';
export type { RedirectRefusal } from './http/errors';
export type { AbortSignalLike } from './http/abort-signal-like';
export { withRetries } from './http/retry';
export type { RetryNotice, RetryPolicy } from './http/retry';
export { kernelQueueBytes, socketOptionsUnavailable } from './http/socket-options';
export type { KernelQueueBytes } from './http/socket-options';
export { DEFAULT_UPSTREAM_RECEIVE_BYTES, MIN_UPSTREAM_RECEIVE_BYTES, setUpstreamReceiveBytes } from './http/node-hooks';
export { adaptProvider } from './providers/adapt';
export { anthropicAdapter } from './providers/anthropic';
export { openaiAdapter } from './providers/openai';
export { createPassthroughAdapter, passthroughAdapter } from './providers/passthrough';
export type { PassthroughTerminator } from './providers/passthrough';
export type { GatewayEvent, ProviderAdapter, ProviderName, TokenUsage } from './providers/types';
