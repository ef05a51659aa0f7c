import { readFileSync } from 'fs';
import { join } from 'path';
import fc from 'fast-check';
import { createParser } from 'eventsource-parser';
import { encodeSse, type SseEvent, type SseEventInit } from '../../../src';
import { bytes, parseChunks, referenceParse, splitAt } from '../helpers';

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'sse');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(join(FIXTURES, name)));

/** Text with ASCII, CJK, 4-byte emoji, spaces, colons and every line-break flavour. */
const textPiece = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('日本語', '漢字テキスト', '😀', '🧪🚀', 'é', ' ', ':', '\n', '\r', '\r\n', '\0', 'data: x'),
);
const text = fc.array(textPiece, { maxLength: 8 }).map((parts) => parts.join(''));
const noBreak = (s: string) => s.replace(/[\r\n]/g, '');

const eventInit: fc.Arbitrary<SseEventInit> = fc.record(
  {
    id: text.map((s) => noBreak(s).replace(/\0/g, '')),
    event: text.map(noBreak),
    retry: fc.nat({ max: 100000 }),
    data: text,
    comment: text,
  },
  { requiredKeys: [] },
);

/** Random cut offsets (sorted, duplicates allowed: empty chunks) for a length. */
const cuts = (length: number) =>
  fc.array(fc.integer({ min: 0, max: length }), { maxLength: 30 }).map((xs) => [...xs].sort((a, b) => a - b));

/** What a spec-following client sees for one encoded event sequence. */
function expectedEvents(inits: readonly SseEventInit[]): SseEvent[] {
  const out: SseEvent[] = [];
  let lastEventId = '';
  for (const e of inits) {
    if (e.id !== undefined) lastEventId = e.id;
    if (e.data === undefined) continue;
    out.push({
      type: e.event === undefined || e.event === '' ? 'message' : e.event,
      data: e.data.replace(/\r\n|\r/g, '\n'),
      lastEventId,
    });
  }
  return out;
}

describe('createSseParser properties', () => {
  it('parses back what encodeSse wrote, for any chunking', () => {
    fc.assert(
      fc.property(
        fc.tuple(fc.array(eventInit, { maxLength: 8 }), fc.constantFrom('\n', '\r\n', '\r')).chain(([inits, eol]) => {
          // encodeSse writes LF; a server may use CRLF or CR instead (data line breaks are already split out).
          const wire = bytes(inits.map(encodeSse).join('').replace(/\n/g, eol));
          return fc.tuple(fc.constant(inits), fc.constant(wire), cuts(wire.length));
        }),
        ([inits, wire, offsets]) => {
          const r = parseChunks(splitAt(wire, offsets));
          expect(r.events).toEqual(expectedEvents(inits));
          expect(r.retries).toEqual(inits.filter((e) => e.retry !== undefined).map((e) => e.retry));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('matches a whole-stream TextDecoder + line-split model on arbitrary bytes, for any chunking', () => {
    const token = fc.oneof(
      fc.constantFrom('data', 'event', 'id', 'retry', 'x', ':', ' ', '\r', '\n', '\r\n', '12', '\0', '日', '😀').map((s) => [...bytes(s)]),
      fc.constantFrom([0xef, 0xbb, 0xbf], [0xe6, 0x97], [0xf0, 0x9f], [0xf0, 0x9f, 0x98], [0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80], [0xef, 0xbf, 0xbf], [0xf4, 0x8f, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xc2, 0xa0]),
      fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 4 }),
    );
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 40 }).chain((tokens) => {
          const all = Uint8Array.from(tokens.flat());
          return fc.tuple(fc.constant(all), cuts(all.length));
        }),
        ([all, offsets]) => {
          expect(parseChunks(splitAt(all, offsets))).toEqual(referenceParse(all));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('matches the model on large CJK-heavy and mixed chunks (whole-region decoding)', () => {
    const cjkLine = fc.constantFrom('東京の天気は晴れ。気温は二十五度で、湿度は六十パーセントです。'.repeat(4), '漢字😀'.repeat(30), 'ascii only text '.repeat(10));
    const token = fc.oneof(
      { weight: 4, arbitrary: cjkLine.map((s) => [...bytes(s)]) },
      { weight: 6, arbitrary: fc.constantFrom('data:', 'data: ', 'event: ', 'id: ', ':', '\r', '\n', '\r\n', '\n\n', '\0').map((s) => [...bytes(s)]) },
      { weight: 1, arbitrary: fc.constantFrom([0xe6, 0x97], [0xff], [0xf0, 0x9f, 0x98], [0xef, 0xbb, 0xbf]) },
    );
    fc.assert(
      fc.property(
        fc.array(token, { minLength: 30, maxLength: 120 }).chain((tokens) => {
          const all = Uint8Array.from(tokens.flat());
          return fc.tuple(fc.constant(all), fc.array(fc.integer({ min: 0, max: all.length }), { maxLength: 3 }).map((xs) => [...xs].sort((a, b) => a - b)));
        }),
        ([all, offsets]) => {
          expect(parseChunks(splitAt(all, offsets))).toEqual(referenceParse(all));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('decodes data exactly as a streaming TextDecoder over all bytes', () => {
    // Values without CR/LF bytes: one data line each, so the event data IS the decoded value.
    const valueBytes = fc.array(
      fc.oneof(fc.integer({ min: 0, max: 255 }).filter((b) => b !== 0x0a && b !== 0x0d), fc.constantFrom(0xe6, 0x97, 0xa5, 0xf0, 0x9f, 0x98, 0x80)),
      { minLength: 1, maxLength: 40 },
    );
    fc.assert(
      fc.property(valueBytes, fc.array(fc.nat(), { maxLength: 6 }), (value, rawCuts) => {
        const all = Uint8Array.from([...bytes('data:'), 0x41, ...value, 0x0a, 0x0a]);
        const offsets = rawCuts.map((c) => c % (all.length + 1)).sort((a, b) => a - b);
        const expected = new TextDecoder().decode(Uint8Array.from([0x41, ...value]));
        expect(parseChunks(splitAt(all, offsets)).events.map((e) => e.data)).toEqual([expected]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('createSseParser on recorded upstream streams', () => {
  /** Every event containing a byte >= 0x80, with its neighbours: the multi-byte part of a big fixture. */
  function nonAsciiWindow(all: Uint8Array): Uint8Array {
    const text = Buffer.from(all).toString('latin1');
    const events = text.split('\n\n').slice(0, -1);
    const keep = new Set<number>();
    events.forEach((e, i) => {
      if (/[\x80-\xff]/.test(e)) for (const j of [i - 1, i, i + 1]) if (j >= 0 && j < events.length) keep.add(j);
    });
    return new Uint8Array(Buffer.from([...keep].sort((a, b) => a - b).map((i) => events[i] + '\n\n').join(''), 'latin1'));
  }

  const cases: [string, Uint8Array][] = [
    ['openai-chat-basic', fixture('openai-chat-basic.sse')],
    ['anthropic-messages-tool-use', fixture('anthropic-messages-tool-use.sse')],
    ['openai-compat-emoji-reasoning (multi-byte window)', nonAsciiWindow(fixture('openai-compat-emoji-reasoning.sse'))],
  ];

  it('agrees with eventsource-parser on the whole fixtures', () => {
    for (const name of ['openai-chat-basic.sse', 'anthropic-messages-tool-use.sse', 'openai-compat-emoji-reasoning.sse']) {
      const all = fixture(name);
      const theirs: SseEvent[] = [];
      const parser = createParser({ onEvent: (e) => theirs.push({ type: e.event ?? 'message', data: e.data, lastEventId: e.id ?? '' }) });
      parser.feed(new TextDecoder().decode(all));
      const ours = parseChunks([all]).events;
      expect(ours.length).toBeGreaterThan(10);
      expect(ours).toEqual(theirs);
    }
  });

  it('keeps the 4-byte emoji events in the multi-byte window', () => {
    const events = parseChunks([cases[2]![1]]).events;
    expect(events.some((e) => /\p{Extended_Pictographic}/u.test(e.data))).toBe(true);
  });

  it.each(cases)('%s: every split offset yields identical events', (_name, all) => {
    const expected = parseChunks([all]).events;
    expect(expected).toEqual(referenceParse(all).events);
    const same = (e: SseEvent, k: number) =>
      e.data === expected[k]!.data && e.type === expected[k]!.type && e.lastEventId === expected[k]!.lastEventId;
    for (let i = 1; i < all.length; i++) {
      const got = parseChunks([all.subarray(0, i), all.subarray(i)]).events;
      if (got.length !== expected.length || !got.every(same)) {
        throw new Error(`split at byte ${i} changed the events`);
      }
    }
  });

  it.each(cases)('%s: CRLF, CR and a BOM give the same events, for random chunkings', (_name, all) => {
    const expected = parseChunks([all]).events;
    const latin = Buffer.from(all).toString('latin1');
    const variants = [
      Buffer.from(latin.replace(/\n/g, '\r\n'), 'latin1'),
      Buffer.from(latin.replace(/\n/g, '\r'), 'latin1'),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(all)]),
    ].map((b) => new Uint8Array(b));
    fc.assert(
      fc.property(fc.constantFrom(...variants).chain((v) => fc.tuple(fc.constant(v), cuts(v.length))), ([v, offsets]) => {
        expect(parseChunks(splitAt(v, offsets)).events).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});
