import type { SseEvent, SseEventInit } from '../../sse';

/**
 * A per-stream re-encoder: the event as received, `event:` only when not `message`, `id:` only
 * when the last event id changed (WHATWG HTML §9.2.6 keeps it across events).
 */
export function reencoder(): (event: SseEvent) => SseEventInit {
  let lastId = '';
  return (e) => {
    const out: SseEventInit = { data: e.data };
    if (e.type !== 'message') out.event = e.type;
    if (e.lastEventId !== lastId) {
      lastId = e.lastEventId;
      out.id = e.lastEventId;
    }
    return out;
  };
}

/** `JSON.parse` that answers `undefined` instead of throwing, and only for objects. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  if (text.length === 0 || (text[0] !== '{' && text.trimStart()[0] !== '{')) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A finite number field, else `undefined`. */
export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** An object field, else `undefined`. */
export function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
