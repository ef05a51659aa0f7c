import { encodeSse, SseFrame } from '../../sse';
import type { BridgeElement } from './types';

/**
 * Encoded SSE bytes. Strings are encoded to UTF-8 once, here: the size is then exact without a
 * `Buffer.byteLength` pass, and `res.write()` neither measures nor encodes again.
 */
export type Chunk = Buffer;

/** The bytes of an element: a frame's own bytes, a byte array as a Buffer view, an event encoded once. */
export function toChunk(element: BridgeElement): Chunk {
  if (element instanceof SseFrame) return element.bytes;
  if (element instanceof Uint8Array) {
    return Buffer.isBuffer(element) ? element : Buffer.from(element.buffer, element.byteOffset, element.byteLength);
  }
  return Buffer.from(encodeSse(element), 'utf8');
}

/** A chunk's size in bytes. */
export function chunkSize(chunk: Chunk): number {
  return chunk.length;
}
