export { sendFlow, errorBody, formatError, sendHttpError } from './send-flow';
export type { BridgeElement, BridgeState, SendFlowOptions, StreamHandle, StreamOutcome, StreamResult } from './send-flow';
export { sse } from './middleware';
export type { SseHandler, SseHandlerContext } from './middleware';
export { DEFAULT_KERNEL_UNSENT_BYTES } from './bridge/kernel-unsent';
