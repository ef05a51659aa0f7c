import type { BridgeElement } from '../../express/send-flow';
import { encodeSseBuffer, SseFrame } from '../../sse';

/** An element's SSE bytes with `id` set (events); encoded bytes and frames are kept as they are. */
export function encodeWithId(element: BridgeElement, id: string): Buffer {
  if (element instanceof SseFrame) return element.bytes;
  if (element instanceof Uint8Array) return Buffer.from(element);
  return encodeSseBuffer({ ...element, id });
}

/** True for an event to encode (not encoded bytes or a frame). */
export function isEvent(element: BridgeElement): element is Exclude<BridgeElement, SseFrame | Uint8Array> {
  return !(element instanceof SseFrame) && !(element instanceof Uint8Array);
}
