/**
 * The input of {@link encodeSse}: one event's fields. An absent (`undefined`) field writes no line.
 */
export interface SseEventInit {
  /** The `id` field. Must not contain CR, LF or NUL. */
  id?: string | undefined;
  /** The `event` field (the event type). Must not contain CR or LF. */
  event?: string | undefined;
  /** The `retry` field: the client's reconnection time in ms, a non-negative integer. */
  retry?: number | undefined;
  /** The event data; split on CRLF, LF and CR into one `data: ` line each. */
  data?: string | undefined;
  /** Comment text, written first; split on CRLF, LF and CR into one `: ` line each. */
  comment?: string | undefined;
}

const LINE_BREAK = /\r\n|\r|\n/;

function fieldString(name: string, value: unknown): string {
  if (typeof value !== 'string') {
    throw new TypeError(`encodeSse: ${name} must be a string, got ${value === null ? 'null' : typeof value}`);
  }
  return value;
}

function writeLines(prefix: string, value: string): string {
  // Fast path: most values hold no line break.
  if (value.indexOf('\n') === -1 && value.indexOf('\r') === -1) return prefix + value + '\n';
  let out = '';
  for (const line of value.split(LINE_BREAK)) out += prefix + line + '\n';
  return out;
}

/**
 * Encodes one event as exact `text/event-stream` wire text, safe against event and header
 * injection: comment lines first, then `id`, `event`, `retry`, `data`, each written as
 * `name: value` (one space, also for an empty value: `data: `), LF line ends, a blank line at
 * the end, no BOM. `data` and `comment` are split on CRLF, LF and CR into one line each, so a
 * parser following WHATWG HTML §9.2.6 gets back the same text with line breaks normalised to LF.
 *
 * @param init the event's fields; `undefined` fields write no line.
 * @returns the wire text (encode it as UTF-8; see {@link encodeSseBuffer}).
 * @throws {TypeError} when `id` contains CR, LF or NUL, `event` contains CR or LF (either would
 *   let a value start a new field or event), `retry` is not a non-negative safe integer, or a
 *   field has the wrong type.
 *
 * @example
 * encodeSse({ id: '7', event: 'delta', data: 'a\nb' }); // 'id: 7\nevent: delta\ndata: a\ndata: b\n\n'
 */
export function encodeSse(init: SseEventInit): string {
  if (init === null || typeof init !== 'object') throw new TypeError('encodeSse: the event must be an object');
  let out = '';
  if (init.comment !== undefined) out += writeLines(': ', fieldString('comment', init.comment));
  if (init.id !== undefined) {
    const id = fieldString('id', init.id);
    if (/[\r\n\0]/.test(id)) {
      throw new TypeError('encodeSse: id must not contain CR, LF or NUL (it would inject fields or be ignored by clients)');
    }
    out += 'id: ' + id + '\n';
  }
  if (init.event !== undefined) {
    const event = fieldString('event', init.event);
    if (/[\r\n]/.test(event)) {
      throw new TypeError('encodeSse: event must not contain CR or LF (it would inject fields or events)');
    }
    out += 'event: ' + event + '\n';
  }
  if (init.retry !== undefined) {
    const retry: unknown = init.retry;
    if (typeof retry !== 'number' || !Number.isSafeInteger(retry) || retry < 0) {
      throw new TypeError(`encodeSse: retry must be a non-negative integer number of ms, got ${String(retry)}`);
    }
    out += 'retry: ' + String(retry) + '\n';
  }
  if (init.data !== undefined) out += writeLines('data: ', fieldString('data', init.data));
  return out + '\n';
}

/**
 * {@link encodeSse} as UTF-8 bytes, ready for `res.write()`.
 *
 * @throws {TypeError} as {@link encodeSse}.
 */
export function encodeSseBuffer(init: SseEventInit): Buffer {
  return Buffer.from(encodeSse(init), 'utf8');
}
