// Public exports of src/sse (re-exports only).
export { createSseParser, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES } from './parser';
export type { SseEvent, SseParser, SseParserOptions } from './parser';
export { encodeSse, encodeSseBuffer } from './encode';
export type { SseEventInit } from './encode';
export { sseDecode } from './sse-decode';
export type { SseDecodeOptions } from './sse-decode';
export { sseEncode } from './sse-encode';
export { createFrameSplitter, DEFAULT_MAX_FRAME_BYTES, SseFrame } from './frames';
export type { FrameSplitter, FrameSplitterOptions } from './frames';
export { sseFrames } from './sse-frames';
export type { SseFramesOptions } from './sse-frames';
