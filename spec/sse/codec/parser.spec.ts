import { createSseParser, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, SseLimitError, type SseEvent } from '../../../src';
import { bytes, parseChunks, parseText } from '../helpers';

const msg = (data: string, lastEventId = '', type = 'message'): SseEvent => ({ type, data, lastEventId });

describe('createSseParser', () => {
  describe('UTF-8 decoding', () => {
    it('decodes a character split across chunks', () => {
      const all = bytes('data: 日本😀\n\n');
      for (let i = 1; i < all.length; i++) {
        expect(parseChunks([all.subarray(0, i), all.subarray(i)]).events).toEqual([msg('日本😀')]);
      }
    });

    it('decodes a 4-byte character fed one byte per chunk', () => {
      const all = bytes('data: 😀\n\n');
      const chunks = Array.from(all, (b) => Uint8Array.of(b));
      expect(parseChunks(chunks).events).toEqual([msg('😀')]);
    });

    it('replaces an invalid byte with U+FFFD', () => {
      const all = Uint8Array.from([...bytes('data: a'), 0xff, ...bytes('b\n\n')]);
      expect(parseChunks([all]).events).toEqual([msg('a\uFFFDb')]);
    });

    it('replaces a truncated sequence before a line end with one U+FFFD', () => {
      const all = Uint8Array.from([...bytes('data: a'), 0xe6, 0x97, ...bytes('\n\n')]);
      expect(parseChunks([all]).events).toEqual([msg('a\uFFFD')]);
    });

    it('replaces an overlong encoding per maximal subpart, as TextDecoder does', () => {
      const value = [0xc0, 0xaf, 0xe0, 0x80, 0xbf, 0xed, 0xa0, 0x80];
      const all = Uint8Array.from([...bytes('data:'), ...value, 0x0a, 0x0a]);
      expect(parseChunks([all]).events).toEqual([msg(new TextDecoder().decode(Uint8Array.from(value)))]);
    });
  });

  describe('BOM', () => {
    it('strips one leading BOM', () => {
      expect(parseChunks([Uint8Array.from([0xef, 0xbb, 0xbf, ...bytes('data: x\n\n')])]).events).toEqual([msg('x')]);
    });

    it('strips a BOM split across chunks', () => {
      const events = parseChunks([Uint8Array.of(0xef), Uint8Array.of(0xbb), Uint8Array.from([0xbf, ...bytes('data: x\n\n')])]).events;
      expect(events).toEqual([msg('x')]);
    });

    it('strips only one BOM: a second one is part of the field name', () => {
      const all = Uint8Array.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, ...bytes('data: x\n\ndata: y\n\n')]);
      expect(parseChunks([all]).events).toEqual([msg('y')]);
    });

    it('does not strip a BOM after the stream start', () => {
      const events = parseChunks([bytes('data: a\n\n'), Uint8Array.from([0xef, 0xbb, 0xbf, ...bytes('data: b\n\n')])]).events;
      expect(events).toEqual([msg('a')]);
    });

    it('keeps the bytes of a partial BOM that turns out not to be one', () => {
      const events = parseChunks([bytes('data: x\n\n').subarray(0, 0), Uint8Array.of(0xef), Uint8Array.of(0xbb, 0x0a), bytes('data: y\n\n')]).events;
      expect(events).toEqual([msg('y')]);
      const comments = parseChunks([Uint8Array.of(0xef), Uint8Array.of(0x3a, 0x0a)]).comments;
      expect(comments).toEqual([]); // "\uFFFD:" is a field line, not a comment
    });
  });

  describe('line ends', () => {
    it.each([
      ['LF', '\n'],
      ['CRLF', '\r\n'],
      ['CR', '\r'],
    ])('accepts %s', (_name, eol) => {
      expect(parseText(`data: a${eol}data: b${eol}${eol}`).events).toEqual([msg('a\nb')]);
    });

    it('treats a CR ending one chunk and an LF starting the next as one line end', () => {
      expect(parseChunks([bytes('data: a\r'), bytes('\ndata: b\r'), bytes('\n\r'), bytes('\n')]).events).toEqual([msg('a\nb')]);
    });

    it('dispatches at a CR at the chunk end without waiting for the next chunk', () => {
      const seen: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => seen.push(e) });
      parser.feed(bytes('data: a\r\r'));
      expect(seen).toEqual([msg('a')]);
    });

    it('treats LF CR as two line ends', () => {
      expect(parseText('data: a\n\rdata: b\n\n').events).toEqual([msg('a'), msg('b')]);
    });

    it('treats CR CR as two line ends, also across chunks', () => {
      expect(parseChunks([bytes('data: a\r'), bytes('\r')]).events).toEqual([msg('a')]);
    });
  });

  describe('field rules', () => {
    it('ignores comments and reports them without the colon and one leading space', () => {
      const r = parseText(': hello\n:  two\n:\ndata: x\n\n');
      expect(r.events).toEqual([msg('x')]);
      expect(r.comments).toEqual(['hello', ' two', '']);
    });

    it('treats a line without a colon as a field name with an empty value', () => {
      expect(parseText('data\n\n').events).toEqual([msg('')]);
      expect(parseText('data\ndata\n\n').events).toEqual([msg('\n')]);
    });

    it('strips exactly one leading space from a value', () => {
      expect(parseText('data:  two spaces\n\n').events).toEqual([msg(' two spaces')]);
      expect(parseText('data:none\n\n').events).toEqual([msg('none')]);
    });

    it('keeps colons after the first one in the value', () => {
      expect(parseText('data: a: b:c\n\n').events).toEqual([msg('a: b:c')]);
    });

    it('joins data lines with LF and removes the final LF', () => {
      expect(parseText('data: a\ndata:\ndata: c\n\n').events).toEqual([msg('a\n\nc')]);
    });

    it('dispatches an empty data field as an event with empty data', () => {
      expect(parseText('data:\n\n').events).toEqual([msg('')]);
    });

    it('does not dispatch an event without data', () => {
      expect(parseText('event: x\nid: 1\n\n').events).toEqual([]);
    });

    it('uses the event field as the type, "message" when empty', () => {
      expect(parseText('event: delta\ndata: a\n\nevent:\ndata: b\n\n').events).toEqual([msg('a', '', 'delta'), msg('b')]);
    });

    it('resets the event type after each dispatch, also when nothing was dispatched', () => {
      expect(parseText('event: x\ndata: a\n\ndata: b\n\n').events).toEqual([msg('a', '', 'x'), msg('b')]);
      expect(parseText('event: x\n\ndata: b\n\n').events).toEqual([msg('b')]);
    });

    it('keeps the last event ID across events until an id field changes it', () => {
      expect(parseText('id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n').events).toEqual([msg('a', '1'), msg('b', '1'), msg('c', '')]);
    });

    it('sets the last event ID from an event that is not dispatched', () => {
      expect(parseText('id: 7\n\ndata: a\n\n').events).toEqual([msg('a', '7')]);
    });

    it('ignores an id containing NUL', () => {
      expect(parseText('id: 1\n\nid: a\0b\ndata: x\n\n').events).toEqual([msg('x', '1')]);
    });

    it('reports retry only when the value is all ASCII digits', () => {
      const r = parseText('retry: 1500\nretry: 15x\nretry: -1\nretry:\nretry: 1.5\nretry:  20\nretry: ٣\nretry:0042\n\n');
      expect(r.retries).toEqual([1500, 42]);
    });

    it('ignores unknown fields', () => {
      expect(parseText('foo: bar\ndata: a\nDATAX: y\n\n').events).toEqual([msg('a')]);
    });

    it('matches field names case-sensitively', () => {
      expect(parseText('Data: a\nEVENT: x\nID: 3\ndata: b\n\n').events).toEqual([msg('b')]);
    });

    it('does not strip a leading space from the field name', () => {
      expect(parseText(' data: a\ndata: b\n\n').events).toEqual([msg('b')]);
    });
  });

  describe('web-platform-tests eventsource cases', () => {
    it('format-field-parse: NUL, stray spaces, case and CR handling', () => {
      const text = 'data:\0\ndata:  2\rData:1\ndata\0:2\ndata:1\r\0data:4\nda-ta:3\rdata_5\ndata:3\rdata:\r\n data:32\ndata:4\n\n';
      expect(parseText(text).events).toEqual([msg('\0\n 2\n1\n3\n\n4')]);
    });

    it('format-field-unknown: unknown fields, bare names and comments', () => {
      expect(parseText('data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test\n\n').events).toEqual([
        msg('test\n\ntest'),
      ]);
    });
  });

  describe('end of stream', () => {
    it('does not dispatch a last event without its blank line', () => {
      expect(parseText('data: a\n\ndata: b\n').events).toEqual([msg('a')]);
    });

    it('discards an incomplete last line', () => {
      expect(parseText('data: a\n\ndata: b').events).toEqual([msg('a')]);
    });

    it('starts a new stream after end(): BOM stripped again, pending event gone', () => {
      const seen: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => seen.push(e) });
      parser.feed(bytes('id: 1\ndata: lost\n'));
      parser.end();
      parser.feed(Uint8Array.from([0xef, 0xbb, 0xbf, ...bytes('\ndata: x\n\n')]));
      expect(seen).toEqual([msg('x')]);
    });

    it('reset() drops the pending event and the last event ID', () => {
      const seen: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => seen.push(e) });
      parser.feed(bytes('id: 9\n\ndata: lost'));
      parser.reset();
      parser.feed(bytes('\ndata: x\n\n'));
      expect(seen).toEqual([msg('x')]);
    });
  });

  describe('limits', () => {
    it('defaults to 1 MiB per line and per event', () => {
      expect(DEFAULT_MAX_LINE_BYTES).toBe(1048576);
      expect(DEFAULT_MAX_EVENT_BYTES).toBe(1048576);
    });

    it('accepts a line of exactly maxLineBytes', () => {
      expect(parseChunks([bytes('data:12345\n\n')], { maxLineBytes: 10 }).events).toEqual([msg('12345')]);
    });

    it('throws SseLimitError from feed() for a longer complete line', () => {
      const parser = createSseParser({ onEvent: () => undefined, maxLineBytes: 10 });
      expect(() => parser.feed(bytes('data:123456\n\n'))).toThrow(SseLimitError);
    });

    it('signals a line limit before the line ends, while its bytes arrive', () => {
      const errors: SseLimitError[] = [];
      const parser = createSseParser({ onEvent: () => undefined, maxLineBytes: 8, onError: (e) => errors.push(e) });
      parser.feed(bytes('data:'));
      expect(errors).toEqual([]);
      parser.feed(bytes('1234'));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line', maxBytes: 8 });
    });

    it('signals an event limit on the data of one event', () => {
      const errors: SseLimitError[] = [];
      const events: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => events.push(e), maxEventBytes: 5, onError: (e) => errors.push(e) });
      parser.feed(bytes('data: ab\ndata: cd\n\ndata: abc\ndata: de\n\n'));
      expect(events).toEqual([msg('ab\ncd')]);
      expect(errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'event', maxBytes: 5 });
    });

    it('stops after a limit error until reset()', () => {
      const events: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => events.push(e), maxLineBytes: 8, onError: () => undefined });
      parser.feed(bytes('data: 123456789\n\n'));
      parser.feed(bytes('data: a\n\n'));
      expect(events).toEqual([]);
      parser.reset();
      parser.feed(bytes('data: b\n\n'));
      expect(events).toEqual([msg('b')]);
    });

    it('never keeps more than maxLineBytes of a hostile endless data line', () => {
      const errors: SseLimitError[] = [];
      const parser = createSseParser({ onEvent: () => undefined, maxLineBytes: 1024, onError: (e) => errors.push(e) });
      const chunk = new Uint8Array(100).fill(0x61);
      parser.feed(bytes('data:'));
      let fed = 0;
      for (let i = 0; i < 100 && errors.length === 0; i++) {
        parser.feed(chunk);
        fed++;
      }
      expect(errors).toHaveLength(1);
      expect(fed).toBe(11); // 1105 bytes pending > 1024: signalled on the chunk that crossed the limit
    });

    it('rejects invalid limit options', () => {
      expect(() => createSseParser({ onEvent: () => undefined, maxLineBytes: 0 })).toThrow(RangeError);
      expect(() => createSseParser({ onEvent: () => undefined, maxEventBytes: 1.5 })).toThrow(RangeError);
    });
  });

  describe('input', () => {
    it('accepts string chunks as UTF-8', () => {
      expect(parseChunks(['data: é', '\n\n']).events).toEqual([msg('é')]);
    });

    it('does not depend on the caller keeping a chunk unchanged after feed()', () => {
      const seen: SseEvent[] = [];
      const parser = createSseParser({ onEvent: (e) => seen.push(e) });
      const chunk = bytes('data: abc');
      parser.feed(chunk);
      chunk.fill(0x7a);
      parser.feed(bytes('\n\n'));
      expect(seen).toEqual([msg('abc')]);
    });

    it('allows a callback to reset the parser mid-chunk', () => {
      const seen: SseEvent[] = [];
      const parser = createSseParser({
        onEvent: (e) => {
          seen.push(e);
          parser.reset();
        },
      });
      parser.feed(bytes('data: a\n\ndata: b\n\n'));
      expect(seen).toEqual([msg('a')]);
    });
  });
});
