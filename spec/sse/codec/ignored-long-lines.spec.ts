import type { SseLimitError } from '../../../src/errors';
import { createSseParser, DEFAULT_MAX_LINE_BYTES, type SseEvent, type SseParserOptions } from '../../../src/sse';
import { bytes, referenceParse, splitAt } from '../helpers';

// WHATWG HTML §9.2.6 ignores comment lines and fields other than data/event/id/retry, so their
// length must not end the stream: the parser skips them without buffering them.

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

describe('SSE parser: ignored lines longer than maxLineBytes', () => {
  it.each([
    ['a 1 MiB comment line', ':'],
    ['a 1 MiB unknown-field line', 'x-padding: '],
    ['a 1 MiB field name without a colon', 'padding'],
    ['a 1 MiB line whose name only starts like a known one', 'datax'],
  ])('%s between events: the stream continues, events intact', (_name, prefix) => {
    const stream = concat(['id: 1\ndata: before\n\n', longLine(prefix, LONG), '\ndata: after\n\n']);
    for (const size of [stream.length, 64 * 1024, 4096, 7]) {
      const out = run(chunked(stream, size), {});
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual([msg('before', '1'), msg('after', '1')]);
    }
  });

  it('skips a long comment without calling onComment, and still reports short ones', () => {
    const comments: string[] = [];
    const stream = concat([': short\n', longLine(':', LONG), '\n: tail\ndata: x\n\n']);
    for (const size of [stream.length, 65536, 1000]) {
      comments.length = 0;
      const out = run(chunked(stream, size), { onComment: (c) => comments.push(c) });
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual([msg('x')]);
      expect(comments).toEqual(['short', 'tail']);
    }
  });

  it('does not buffer skipped lines: 64 padding comments of 1 MiB pass a 1 KiB line limit', () => {
    const padding = longLine(': ', MiB);
    const parts: (string | Uint8Array)[] = [];
    for (let i = 0; i < 64; i++) parts.push(`data: ${i}\n\n`, padding, '\r\n');
    const stream = concat(parts);
    for (const withOnComment of [false, true]) {
      const comments: string[] = [];
      const out = run(chunked(stream, 64 * 1024), {
        maxLineBytes: 1024,
        ...(withOnComment ? { onComment: (c: string) => comments.push(c) } : {}),
      });
      expect(out.errors).toEqual([]);
      expect(out.events.map((e) => e.data)).toEqual(Array.from({ length: 64 }, (_, i) => String(i)));
      expect(comments).toEqual([]);
    }
  });

  it('an unknown field is recognised by its first bytes, even split one byte per chunk', () => {
    const stream = concat([longLine('dat', 5000, 0x41), '\ndata: ok\n\n']); // "datAAAA…" is not data
    const out = run(chunked(stream, 1), { maxLineBytes: 16 });
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
      const out = run(splitAt(stream, offsets), { maxLineBytes: 100 });
      expect(out.errors).toEqual([]);
      expect(out.events).toEqual(expected);
    }
  });

  it('after a BOM split across chunks, an ignored first line is skipped', () => {
    const stream = concat([new Uint8Array([0xef, 0xbb, 0xbf]), longLine(':', 2000), '\ndata: z\n\n']);
    const out = run(splitAt(stream, [1, 2, 3, 4]), { maxLineBytes: 64 });
    expect(out.errors).toEqual([]);
    expect(out.events).toEqual([msg('z')]);
    // Not a BOM: the held bytes start an unknown field.
    const notBom = concat([new Uint8Array([0xef, 0xbb]), longLine('x', 2000), '\ndata: z\n\n']);
    const out2 = run(splitAt(notBom, [1, 2, 3]), { maxLineBytes: 64 });
    expect(out2.errors).toEqual([]);
    expect(out2.events).toEqual([msg('z')]);
  });
});
