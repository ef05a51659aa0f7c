export { sendFlow, errorBody, formatError, sendHttpError } from './bridge';
export type { BridgeElement, BridgeState, SendFlowOptions, StreamHandle, StreamOutcome, StreamResult } from './bridge';
export { sse } from './middleware';
export type { SseHandler, SseHandlerContext } from './middleware';
