import type { SseEvent, SseEventInit } from '../sse';

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

/**
 * An event's type as Anthropic's and the Responses API's streams name it: its SSE `event:` field,
 * or, when it has none (`message`), the `type` of its JSON body (`message` when that has none).
 */
export function eventTypeOf(e: SseEvent, body: Record<string, unknown> | undefined): string {
  return e.type !== 'message' ? e.type : typeof body?.type === 'string' ? body.type : 'message';
}

/** A finite number field, else `undefined`. */
export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** An object field, else `undefined`. */
export function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const ASCII_ESCAPE = Buffer.from('\\u00');

/**
 * True when `frame` holds a JSON `\u00XX` escape of a printable ASCII character (U+0020–U+007F,
 * RFC 8259 §7). A key or value an adapter's `needsDecode` looks for by its bytes (`"usage"`,
 * `"error"`, `message_stop`) may be spelt that way (`"\u0075sage"` is `"usage"`), so a frame
 * with one is decoded rather than passed over. Escapes of other characters (CJK text as
 * `\u4f60`, control characters as `\u001b`) cannot spell those names and do not count.
 */
export function hasAsciiEscape(frame: Buffer): boolean {
  for (let at = frame.indexOf(ASCII_ESCAPE); at !== -1; at = frame.indexOf(ASCII_ESCAPE, at + 4)) {
    const digit = frame[at + 4];
    if (digit !== undefined && digit >= 0x32 && digit <= 0x37) return true;
  }
  return false;
}
