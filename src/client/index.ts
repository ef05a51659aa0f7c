// Public exports of src/client (re-exports only).
export { connectSse } from './connect-sse';
export type { ConnectSseOptions, SseConnectingInfo, SseReconnectInfo, SseResponseInfo } from './connect-sse';
export { backoffDelayMs } from '../http/backoff';
export type { BackoffInput } from '../http/backoff';
export { nodeFetchSse } from './fetch';
export { defaultSseAgent } from './transport';
export type { SseFetch, SseFetchInit, SseFetchResponse } from './fetch';
export { openSse } from './open-sse';
export type { OpenSseStream } from './open-sse';
