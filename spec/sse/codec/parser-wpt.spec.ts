import fc from 'fast-check';
import { SseLimitError } from '../../../src/errors';
import { createSseParser, type SseEvent, type SseParserOptions } from '../../../src/sse';

/**
 * SSE parser specs: WHATWG HTML §9.2.6 "Interpreting an event stream" cases ported
 * from web-platform-tests (eventsource/format-*.any.js, fed as message.py serves them: the
 * message, then "\n\n\n" or, with newline=none, "\n"), hostile bytes, and memory bounds.
 */

interface Parsed {
  events: SseEvent[];
  retries: number[];
  comments: string[];
  errors: SseLimitError[];
}

function parse(chunks: readonly Uint8Array[], options: Omit<SseParserOptions, 'onEvent'> = {}): Parsed {
  const out: Parsed = { events: [], retries: [], comments: [], errors: [] };
  const parser = createSseParser({
    onError: (e) => out.errors.push(e),
    ...options,
    onEvent: (e) => out.events.push(e),
    onRetry: (ms) => out.retries.push(ms),
    onComment: (c) => out.comments.push(c),
  });
  for (const c of chunks) parser.feed(c);
  parser.end();
  return out;
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Feeds `bytes` whole, byte by byte, and split at every single offset; all must agree. */
function parseAllSplits(bytes: Uint8Array): Parsed {
  const whole = parse([bytes]);
  const single = parse(Array.from(bytes, (b) => Uint8Array.of(b)));
  expect(single.events).toEqual(whole.events);
  expect(single.retries).toEqual(whole.retries);
  for (let i = 1; i < bytes.length; i++) {
    const split = parse([bytes.subarray(0, i), bytes.subarray(i)]);
    expect(split.events).toEqual(whole.events);
  }
  return whole;
}

/** A naive model of §9.2.6 on the whole decoded stream (TextDecoder strips one leading BOM). */
function reference(bytes: Uint8Array): Pick<Parsed, 'events' | 'retries'> {
  const text = new TextDecoder('utf-8').decode(bytes);
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop();
  const events: SseEvent[] = [];
  const retries: number[] = [];
  let data = '';
  let type = '';
  let id = '';
  for (const line of lines) {
    if (line === '') {
      if (data === '') {
        type = '';
        continue;
      }
      events.push({ type: type === '' ? 'message' : type, data: data.endsWith('\n') ? data.slice(0, -1) : data, lastEventId: id });
      data = '';
      type = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data += value + '\n';
    else if (field === 'event') type = value;
    else if (field === 'id') {
      if (!value.includes('\0')) id = value;
    } else if (field === 'retry' && /^[0-9]+$/.test(value)) retries.push(Number.parseInt(value, 10));
  }
  return { events, retries };
}

const wptMessage = (message: string, newlineNone = false): Buffer => utf8(message + (newlineNone ? '\n' : '\n\n\n'));
const datas = (p: Parsed): string[] => p.events.map((e) => e.data);

describe('createSseParser against web-platform-tests eventsource/format-*', () => {
  it('format-bom: a second BOM is part of the field name, so that event is not a data field', () => {
    const p = parseAllSplits(wptMessage('\uFEFFdata:1\n\n\uFEFFdata:2\n\ndata:3'));
    expect(datas(p)).toEqual(['1', '3']);
  });

  it('format-bom-2: of a double BOM only the first is stripped', () => {
    const p = parseAllSplits(wptMessage('\uFEFF\uFEFFdata:1\n\ndata:2\n\ndata:3'));
    expect(datas(p)).toEqual(['2', '3']);
  });

  it('format-comments: comments with NUL, CR, CRLF and 2 KiB bodies between data lines', () => {
    const long = 'x'.repeat(2048);
    const p = parseAllSplits(wptMessage(`data:1\r:\0\n:\r\ndata:2\n:${long}\rdata:3\n:data:fail\r:${long}\ndata:4\n`, true));
    expect(datas(p)).toEqual(['1\n2\n3\n4']);
  });

  it('format-data-before-final-empty-line: an event without its blank line is dropped at EOF', () => {
    const p = parseAllSplits(utf8('retry:1000\ndata:test1\n\nid:test\ndata:test2'));
    expect(datas(p)).toEqual(['test1']);
    expect(p.retries).toEqual([1000]);
  });

  it('format-field-data: "data:" gives "", two bare "data" lines give "\\n"', () => {
    const p = parseAllSplits(wptMessage('data:\n\ndata\ndata\n\ndata:test'));
    expect(datas(p)).toEqual(['', '\n', 'test']);
  });

  it('format-field-event-empty: an empty event field means "message"', () => {
    const p = parseAllSplits(wptMessage('event: \ndata:data'));
    expect(p.events).toEqual([{ type: 'message', data: 'data', lastEventId: '' }]);
  });

  it('format-field-event: the event type is reset after each dispatch', () => {
    const p = parseAllSplits(wptMessage('event:test\ndata:x\n\ndata:x'));
    expect(p.events.map((e) => e.type)).toEqual(['test', 'message']);
  });

  it('format-field-id: the id persists across events until changed', () => {
    const p = parseAllSplits(wptMessage('id: 1\ndata: x\n\ndata: y\n\nid:\ndata: z'));
    expect(p.events.map((e) => e.lastEventId)).toEqual(['1', '1', '']);
  });

  it.each(['\u0000\u0000', 'x\u0000', '\u0000x', 'x\u0000x', ' \u0000'])('format-field-id-null: id %j is ignored', (idValue) => {
    const p = parseAllSplits(wptMessage(`id: ${idValue}\ndata: hello\n\nid: ${idValue}\ndata: hello`));
    expect(p.events.map((e) => e.lastEventId)).toEqual(['', '']);
  });

  it('format-field-id-2: a non-ASCII id survives every split', () => {
    const p = parseAllSplits(wptMessage('id: …\ndata: hello\n\ndata: …'));
    expect(p.events).toEqual([
      { type: 'message', data: 'hello', lastEventId: '…' },
      { type: 'message', data: '…', lastEventId: '…' },
    ]);
  });

  it('format-field-parsing: NUL, case, dashes, stray CRs and leading spaces', () => {
    const p = parseAllSplits(
      wptMessage('data:\0\ndata:  2\rData:1\ndata\0:2\ndata:1\r\0data:4\nda-ta:3\rdata_5\ndata:3\rdata:\r\n data:32\ndata:4\n', true),
    );
    expect(datas(p)).toEqual(['\0\n 2\n1\n3\n\n4']);
  });

  it('format-field-retry-bogus: "retry:1000x" is ignored', () => {
    const p = parseAllSplits(wptMessage('retry:3000\nretry:1000x\ndata:x'));
    expect(p.retries).toEqual([3000]);
  });

  it('format-field-retry-empty: a bare "retry" is ignored', () => {
    const p = parseAllSplits(wptMessage('retry\ndata:test'));
    expect(p.retries).toEqual([]);
    expect(datas(p)).toEqual(['test']);
  });

  it('format-field-unknown: unknown fields, colonless lines and comments are ignored', () => {
    const p = parseAllSplits(wptMessage('data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test'));
    expect(datas(p)).toEqual(['test\n\ntest']);
  });

  it('format-leading-space: only one space is stripped, a tab is kept', () => {
    const p = parseAllSplits(wptMessage('data:\ttest\rdata: \ndata:test'));
    expect(datas(p)).toEqual(['\ttest\n\ntest']);
  });

  it('format-newlines: CRLF and LF mixed', () => {
    const p = parseAllSplits(utf8('data:test\r\ndata\ndata:test\r\n\r\n'));
    expect(datas(p)).toEqual(['test\n\ntest']);
  });

  it('format-null-character: a NUL in data is kept', () => {
    const p = parseAllSplits(wptMessage('data:\0\n'));
    expect(datas(p)).toEqual(['\0']);
  });

  it('format-utf-8: non-ASCII data', () => {
    const p = parseAllSplits(wptMessage('data:ok…'));
    expect(datas(p)).toEqual(['ok…']);
  });

  it('message2-like: multi-line data, an empty data event, then "end"', () => {
    const p = parseAllSplits(utf8('data:msg\ndata:msg\n\ndata:\n\ndata:end\n\n'));
    expect(datas(p)).toEqual(['msg\nmsg', '', 'end']);
  });
});

describe('createSseParser with hostile bytes', () => {
  it.each([
    ['an overlong NUL', [0xc0, 0x80]],
    ['an overlong slash', [0xe0, 0x80, 0xaf]],
    ['a UTF-8-encoded high surrogate', [0xed, 0xa0, 0x80]],
    ['a UTF-8-encoded surrogate pair (CESU-8)', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['a lone continuation byte', [0x80]],
    ['0xFF', [0xff]],
    ['a truncated 4-byte sequence', [0xf0, 0x9f, 0x98]],
  ])('replaces %s exactly as TextDecoder does, in short and long (ICU) lines', (_name, bad) => {
    const badBytes = Buffer.from(bad);
    for (const filler of ['a', '漢'.repeat(150), '漢'.repeat(800)]) {
      const line = Buffer.concat([utf8(`data: ${filler}`), badBytes, utf8(`${filler}\n\n`)]);
      const expected = new TextDecoder().decode(Buffer.concat([utf8(filler), badBytes, utf8(filler)]));
      expect(expected).not.toMatch(/[\uD800-\uDFFF]/);
      expect(datas(parse([line]))).toEqual([expected]);
      // also inside a large (region-decoded) chunk of several events
      const region = Buffer.concat([utf8(`data: ${'漢'.repeat(800)}\n\n`), line, utf8(`data: ${'漢'.repeat(800)}\n\n`)]);
      expect(datas(parse([region]))[1]).toEqual(expected);
    }
  });

  it('drops a truncated multi-byte sequence at EOF together with its incomplete line', () => {
    const p = parse([utf8('data: ok\n\ndata: x'), Buffer.from([0xf0, 0x9f])]);
    expect(datas(p)).toEqual(['ok']);
  });

  it('a truncated sequence before a line end becomes one U+FFFD, the line end still counts', () => {
    const p = parseAllSplits(Buffer.concat([utf8('data: a'), Buffer.from([0xe2, 0x82]), utf8('\n\n')]));
    expect(datas(p)).toEqual(['a\uFFFD']);
  });

  it('a stream of 4 MiB of CRs dispatches nothing, keeps nothing and raises nothing', () => {
    const out = parse(Array.from({ length: 64 }, () => Buffer.alloc(64 * 1024, 0x0d)));
    expect(out).toEqual({ events: [], retries: [], comments: [], errors: [] });
  });

  it('a CR-only stream still delimits events', () => {
    expect(datas(parseAllSplits(utf8('data:a\r\rdata:b\r\r')))).toEqual(['a', 'b']);
  });

  it('stops with ERR_TIDEGATE_SSE_LIMIT on a data line without a newline, as soon as it passes maxLineBytes', () => {
    const errors: SseLimitError[] = [];
    let fedWhenFailed = -1;
    const parser = createSseParser({ onEvent: () => undefined, maxLineBytes: 64 * 1024, onError: (e) => errors.push(e) });
    const chunk = Buffer.alloc(1000, 0x78);
    // A data line is kept until its end, so it has a limit (an ignored line would be skipped).
    chunk.write('data:');
    for (let i = 0; i < 1000; i++) {
      parser.feed(chunk);
      if (errors.length > 0 && fedWhenFailed === -1) fedWhenFailed = (i + 1) * chunk.length;
    }
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SseLimitError);
    expect(errors[0]?.code).toBe('ERR_TIDEGATE_SSE_LIMIT');
    expect(fedWhenFailed).toBeGreaterThan(64 * 1024);
    expect(fedWhenFailed).toBeLessThanOrEqual(64 * 1024 + chunk.length);
  });

  it('a huge data line without a newline leaves the heap bounded with the default limit', () => {
    const errors: SseLimitError[] = [];
    const parser = createSseParser({ onEvent: () => undefined, onError: (e) => errors.push(e) });
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    global.gc?.();
    const before = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    parser.feed(Buffer.from('data:'));
    for (let i = 0; i < 256; i++) parser.feed(chunk); // 64 MiB offered
    global.gc?.();
    const after = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    expect(errors.map((e) => e.limit)).toEqual(['line']);
    expect(after - before).toBeLessThan(32 * 1024 * 1024);
  });

  it('an event made of 0-byte data lines is bounded by maxEventBytes (the joining LFs count)', () => {
    const out = parse([Buffer.from('data\n'.repeat(5000))], { maxEventBytes: 1024 });
    expect(out.errors.map((e) => e.limit)).toEqual(['event']);
    expect(out.events).toEqual([]);
  });

  it('the line limit also holds for a complete line inside one chunk', () => {
    const out = parse([utf8(`data: ${'x'.repeat(5000)}\n\n`)], { maxLineBytes: 1024 });
    expect(out.errors.map((e) => e.limit)).toEqual(['line']);
    expect(out.events).toEqual([]);
  });

  it('100k tiny events in one chunk are all dispatched, in order', () => {
    const out = parse([Buffer.from('data:x\n\n'.repeat(100_000))]);
    expect(out.events).toHaveLength(100_000);
    expect(out.events[99_999]).toEqual({ type: 'message', data: 'x', lastEventId: '' });
  });

  it('"data :x" and " data:x" are unknown fields, "data" with no colon is an empty data line', () => {
    expect(datas(parseAllSplits(utf8('data :x\n data:y\ndata\n\n')))).toEqual(['']);
  });

  it('retry with 400 digits is all digits: reported, and never NaN', () => {
    const out = parse([utf8(`retry: ${'9'.repeat(400)}\nretry: 00012\n`)]);
    expect(out.retries).toHaveLength(2);
    expect(out.retries.some((r) => Number.isNaN(r))).toBe(false);
    expect(out.retries[1]).toBe(12);
  });

  it('retry with non-ASCII digits (Arabic-Indic, fullwidth) is ignored', () => {
    expect(parse([utf8('retry: ١٢\nretry: １２\nretry: 1 2\nretry:-1\n')]).retries).toEqual([]);
  });

  it('an id containing NUL mid-stream keeps the previous id', () => {
    const p = parseAllSplits(utf8('id: a\ndata: 1\n\nid: b\0c\ndata: 2\n\n'));
    expect(p.events.map((e) => e.lastEventId)).toEqual(['a', 'a']);
  });

  it('a BOM after the start is content (U+FEFF kept in the data)', () => {
    expect(datas(parseAllSplits(utf8('data: \uFEFFx\n\n')))).toEqual(['\uFEFFx']);
  });

  it('a split BOM prefix followed by a non-BOM byte is ordinary line content', () => {
    const p = parse([Buffer.from([0xef]), Buffer.from([0xbb]), utf8('\ndata: x\n\n')]);
    expect(datas(p)).toEqual(['x']);
  });

  it('matches a naive §9.2.6 model on random hostile byte streams split at random offsets', () => {
    const pieces = [
      'data:', 'data: ', 'data', 'id:', 'id: ', 'event:', 'retry:', 'retry: 12', ':', ' ', '\n', '\r', '\r\n', '\n\n', 'x', '…',
      '😀', '漢'.repeat(100), '漢'.repeat(900), '\0', '\uFEFF',
    ].map((s) => Array.from(utf8(s)));
    const raw = [[0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf0, 0x9f], [0x80], [0xff], [0xe2, 0x82]];
    const piece = fc.constantFrom(...pieces, ...raw);
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 80 }), fc.array(fc.nat(), { maxLength: 8 }), (parts, cuts) => {
        const all = Buffer.from(parts.flat());
        const offsets = [...new Set(cuts.map((c) => (all.length === 0 ? 0 : c % all.length)))].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let prev = 0;
        for (const o of offsets) {
          chunks.push(all.subarray(prev, o));
          prev = o;
        }
        chunks.push(all.subarray(prev));
        const got = parse(chunks, { maxLineBytes: Infinity, maxEventBytes: Infinity });
        const want = reference(all);
        expect(got.events).toEqual(want.events);
        expect(got.retries).toEqual(want.retries);
      }),
      { numRuns: 1000, seed: 20240611 },
    );
  });
});
