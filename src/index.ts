/**
 * tidegate: end-to-end backpressure for LLM token streams.
 *
 * `upstream (node-fetch) → Flow<Uint8Array> → sseDecode → provider adapter → policy operators
 * → sseEncode → Express demand bridge → socket`
 */
export * from './errors';
export * from './flow';
export * from './sse';
export * from './express';
export * from './client';
export * from './upstream';
export * from './gateway';
export * from './simulator';
export * from './playground';
