// Public exports of src/client (re-exports only).
export { connectSse } from './connect-sse';
export type { ConnectSseOptions, SseReconnectInfo, SseResponseInfo } from './connect-sse';
export { backoffDelayMs } from './backoff';
export type { BackoffInput } from './backoff';
export { defaultSseAgent, nodeFetchSse } from './fetch';
export type { SseFetch, SseFetchInit, SseFetchResponse } from './fetch';
export { openSse } from './open-sse';
export type { OpenSseStream } from './open-sse';
