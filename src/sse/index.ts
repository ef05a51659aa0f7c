// Public exports of src/sse (re-exports only).
export { createSseParser, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES } from './codec/parser';
export type { SseEvent, SseParser, SseParserOptions } from './codec/parser';
export { encodeSse, encodeSseBuffer } from './codec/encode';
export type { SseEventInit } from './codec/encode';
export { sseDecode } from './operators/sse-decode';
export type { SseDecodeOptions } from './operators/sse-decode';
export { sseEncode } from './operators/sse-encode';
export { createFrameSplitter, DEFAULT_MAX_FRAME_BYTES, SseFrame } from './codec/frames';
export type { FrameSplitter, FrameSplitterOptions } from './codec/frames';
export { sseFrames } from './operators/sse-frames';
export type { SseFramesOptions } from './operators/sse-frames';
