import type { SseLimitError } from '../../../src/errors';
import { createSseParser, DEFAULT_MAX_LINE_BYTES, type SseEvent, type SseParserOptions } from '../../../src/sse';
import { bytes, referenceParse, splitAt } from '../helpers';

// WHATWG HTML §9.2.6 ignores comment lines and fields other than data/event/id/retry: the parser
// skips them without buffering them, but counts their bytes against maxLineBytes, so an endless
// ignored line ends the stream as an endless data line does.

const MiB = 1024 * 1024;
const msg = (data: string, lastEventId = '', type = 'message'): SseEvent => ({ type, data, lastEventId });

interface Run {
  events: SseEvent[];
  comments: string[];
  errors: SseLimitError[];
}

function run(chunks: Iterable<Uint8Array>, options: Omit<SseParserOptions, 'onEvent' | 'onError'> = {}): Run {
  const out: Run = { events: [], comments: [], errors: [] };
  const parser = createSseParser({ ...options, onEvent: (e) => out.events.push(e), onError: (e) => out.errors.push(e) });
  for (const chunk of chunks) parser.feed(chunk);
  parser.end();
  return out;
}

/** `data` cut into chunks of `size` bytes (views, no copies). */
function* chunked(data: Uint8Array, size: number): Generator<Uint8Array> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, Math.min(data.length, i + size));
}

function concat(parts: (string | Uint8Array)[]): Uint8Array {
  const arrays = parts.map((p) => (typeof p === 'string' ? bytes(p) : p));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

/** A line of `prefix` followed by filler up to `length` bytes (terminator excluded). */
function longLine(prefix: string, length: number, fill = 0x78): Uint8Array {
  const line = new Uint8Array(length).fill(fill);
  line.set(bytes(prefix));
  return line;
}

const LONG = DEFAULT_MAX_LINE_BYTES + 1; // one byte past the default limit

describe('SSE parser: ignored lines and maxLineBytes', () => {
  const prefixes = [
    ['a comment line', ':'],
    ['an unknown-field line', 'x-padding: '],
    ['a field name without a colon', 'padding'],
    ['a line whose name only starts like a known one', 'datax'],
  ];

  it.each(prefixes)('%s within the limit between events: the stream continues, events intact', (_name, prefix) => {
    const stream = concat(['id: 1\ndata: before\n\n', longLine(prefix, DEFAULT_MAX_LINE_BYTES), '\ndata: after\n\n']);
    for (const size of [stream.length, 64 * 1024, 4096, 7]) {
      const out = run(chunked(stream, size), {});
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual([msg('before', '1'), msg('after', '1')]);
    }
  });

  it.each(prefixes)('%s one byte past the limit signals the line limit, whatever the chunking', (_name, prefix) => {
    const stream = concat(['data: before\n\n', longLine(prefix, LONG), '\ndata: after\n\n']);
    for (const size of [stream.length, 64 * 1024, 4096, 7]) {
      const out = run(chunked(stream, size), {});
      expect(out.errors).toHaveLength(1);
      expect(out.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line', maxBytes: DEFAULT_MAX_LINE_BYTES });
      expect(out.events).toEqual([msg('before')]);
    }
  });

  it('ends an endless ignored line once its bytes pass the limit, holding none of them', () => {
    const errors: SseLimitError[] = [];
    const parser = createSseParser({ maxLineBytes: 64 * 1024, onEvent: () => undefined, onError: (e) => errors.push(e) });
    const chunk = new Uint8Array(1024).fill(0x78); // "xxxx…": a field name that is none of the four
    let fed = 0;
    while (errors.length === 0 && fed < MiB) {
      parser.feed(chunk);
      fed += chunk.length;
      if (errors.length === 0) expect(parser.heldBytes).toBeLessThanOrEqual(16);
    }
    expect(errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line', maxBytes: 64 * 1024 });
    expect(fed).toBe(64 * 1024 + 1024);
  });

  it('lets comment keep-alives of a normal size through, reported to onComment', () => {
    const comments: string[] = [];
    const stream = bytes(': ping\n\n'.repeat(1000) + 'data: x\n\n');
    const out = run(chunked(stream, 5), { maxLineBytes: 64, onComment: (c) => comments.push(c) });
    expect(out.errors).toEqual([]);
    expect(out.events).toEqual([msg('x')]);
    expect(comments).toHaveLength(1000);
  });

  it('signals the line limit for a comment past it that onComment wants, reporting the short ones before', () => {
    const comments: string[] = [];
    const stream = concat([': short\n', longLine(':', 2000), '\n: tail\ndata: x\n\n']);
    for (const size of [stream.length, 1000, 7]) {
      comments.length = 0;
      const out = run(chunked(stream, size), { onComment: (c) => comments.push(c), maxLineBytes: 1024 });
      expect(out.errors).toHaveLength(1);
      expect(out.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line', maxBytes: 1024 });
      expect(out.events).toEqual([]);
      expect(comments).toEqual(['short']);
    }
  });

  it('does not buffer skipped lines: 64 padding comments of 1 MiB hold at most a line head', () => {
    const padding = longLine(': ', MiB);
    const parts: (string | Uint8Array)[] = [];
    for (let i = 0; i < 64; i++) parts.push(`data: ${i}\n\n`, padding, '\r\n');
    const stream = concat(parts);
    const events: string[] = [];
    const parser = createSseParser({ maxLineBytes: MiB, onEvent: (e) => events.push(e.data) });
    let maxHeld = 0;
    for (const chunk of chunked(stream, 64 * 1024)) {
      parser.feed(chunk);
      maxHeld = Math.max(maxHeld, parser.heldBytes);
    }
    parser.end();
    expect(events).toEqual(Array.from({ length: 64 }, (_, i) => String(i)));
    expect(maxHeld).toBeLessThan(1024);
  });

  it('an unknown field is recognised by its first bytes, even split one byte per chunk', () => {
    const stream = concat([longLine('dat', 5000, 0x41), '\ndata: ok\n\n']); // "datAAAA…" is not data
    const out = run(chunked(stream, 1), { maxLineBytes: 5000 });
    expect(out.errors).toEqual([]);
    expect(out.events).toEqual([msg('ok')]);
  });

  it('still signals the line limit for a data, event, id or retry line', () => {
    for (const prefix of ['data: ', 'event:', 'id: ', 'retry: ', 'data:']) {
      const line = longLine(prefix, 5000, 0x37);
      for (const size of [line.length + 1, 1000, 3]) {
        const out = run(chunked(concat([line, '\n\n']), size), { maxLineBytes: 1024 });
        expect(out.errors).toHaveLength(1);
        expect(out.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line', maxBytes: 1024 });
      }
    }
  });

  it('a known field name alone, or with its colon, is not mistaken for an unknown one', () => {
    const stream = bytes('data\nevent:e\nid\ndata:1\n\n');
    for (const size of [1, 2, 3, stream.length]) {
      const out = run(chunked(stream, size), { maxLineBytes: 7 }); // "event:e" is 7 bytes
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual([msg('\n1', '', 'e')]);
    }
  });

  it('every line end (LF, CR, CRLF split across chunks) ends a skipped line', () => {
    const stream = concat([longLine(':', 3000), '\r', longLine('foo', 3000), '\r\n', longLine(':', 3000), '\ndata: a\r\n\r\n']);
    const expected = referenceParse(stream).events;
    expect(expected).toEqual([msg('a')]);
    for (const offsets of [[3001], [3000], [6002, 6003], [1, 3001, 6002, 6003, 9004]]) {
      const out = run(splitAt(stream, offsets), { maxLineBytes: 3000 });
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual(expected);
    }
  });

  it('after a BOM split across chunks, an ignored first line is skipped', () => {
    const stream = concat([new Uint8Array([0xef, 0xbb, 0xbf]), longLine(':', 2000), '\ndata: z\n\n']);
    const out = run(splitAt(stream, [1, 2, 3, 4]), { maxLineBytes: 2000 });
    expect(out.errors).toEqual([]);
    expect(out.events).toEqual([msg('z')]);
    // Not a BOM: the held bytes start an unknown field.
    const notBom = concat([new Uint8Array([0xef, 0xbb]), longLine('x', 2000), '\ndata: z\n\n']);
    const out2 = run(splitAt(notBom, [1, 2, 3]), { maxLineBytes: 2002 });
    expect(out2.errors).toEqual([]);
    expect(out2.events).toEqual([msg('z')]);
  });
});
