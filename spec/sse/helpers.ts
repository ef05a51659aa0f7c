import { createSseParser, type SseEvent, type SseParserOptions } from '../../src/sse';

/** Everything a parser reported, in order. */
export interface ParseResult {
  events: SseEvent[];
  retries: number[];
  comments: string[];
}

/** Feeds `chunks` to a fresh parser (then `end()`), collecting every callback. */
export function parseChunks(
  chunks: Iterable<Uint8Array | string>,
  options: Omit<SseParserOptions, 'onEvent'> = {},
): ParseResult {
  const result: ParseResult = { events: [], retries: [], comments: [] };
  const parser = createSseParser({
    ...options,
    onEvent: (e) => result.events.push(e),
    onRetry: (ms) => result.retries.push(ms),
    onComment: (c) => result.comments.push(c),
  });
  for (const chunk of chunks) parser.feed(chunk);
  parser.end();
  return result;
}

export function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** Parses `text` fed as one chunk of UTF-8 bytes. */
export function parseText(text: string): ParseResult {
  return parseChunks([bytes(text)]);
}

/** Splits `data` at the given sorted offsets into subarrays (some possibly empty). */
export function splitAt(data: Uint8Array, offsets: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const o of offsets) {
    out.push(data.subarray(prev, o));
    prev = o;
  }
  out.push(data.subarray(prev));
  return out;
}

/**
 * A deliberately naive model of WHATWG HTML §9.2.6, written straight from the spec text:
 * decode the whole stream with a (BOM-stripping) TextDecoder, split lines on CRLF/LF/CR,
 * drop the incomplete last line, and run the field rules on strings.
 */
export function referenceParse(all: Uint8Array): ParseResult {
  const text = new TextDecoder().decode(all);
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop(); // the text after the last line end is not a line: discarded at EOF
  const result: ParseResult = { events: [], retries: [], comments: [] };
  let data = '';
  let eventType = '';
  let lastEventId = '';
  for (const line of lines) {
    if (line === '') {
      if (data === '') {
        eventType = '';
        continue;
      }
      if (data.endsWith('\n')) data = data.slice(0, -1);
      result.events.push({ type: eventType === '' ? 'message' : eventType, data, lastEventId });
      data = '';
      eventType = '';
      continue;
    }
    if (line.startsWith(':')) {
      const c = line.slice(1);
      result.comments.push(c.startsWith(' ') ? c.slice(1) : c);
      continue;
    }
    const colon = line.indexOf(':');
    let field = line;
    let value = '';
    if (colon !== -1) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    }
    if (field === 'event') eventType = value;
    else if (field === 'data') data += value + '\n';
    else if (field === 'id') {
      if (!value.includes('\0')) lastEventId = value;
    } else if (field === 'retry') {
      if (/^[0-9]+$/.test(value)) result.retries.push(parseInt(value, 10));
    }
  }
  return result;
}
