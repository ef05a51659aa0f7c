import fc from 'fast-check';
import { SseLimitError } from '../../../src/errors';
import { createFlow } from '../../../src/flow';
import { createFrameSplitter, sseFrames, type SseFrame } from '../../../src/sse';
import { bytes, parseChunks, splitAt } from '../helpers';

/** Feeds `chunks` to a splitter (then `end()`) and returns its frames. */
function frames(chunks: readonly Uint8Array[], options: { maxFrameBytes?: number; maxEventBytes?: number } = {}): SseFrame[] {
  const out: SseFrame[] = [];
  const splitter = createFrameSplitter({ ...options, onFrame: (f) => out.push(f) });
  for (const c of chunks) splitter.feed(c);
  splitter.end();
  return out;
}

const HEARTBEAT = bytes(': hb\n\n');
const text = (fs: readonly SseFrame[]): string => Buffer.concat(fs.map((f) => f.bytes)).toString('utf8');
const cuts = (length: number) => fc.array(fc.integer({ min: 0, max: length }), { maxLength: 20 }).map((xs) => [...xs].sort((a, b) => a - b));

/** Raw event-stream text: any mix of fields, comments, CJK/emoji, every line-end flavour. */
const piece = fc.oneof(
  fc.constantFrom('data: ', 'data:', 'event: x', 'id: 7', 'id', 'retry: 10', ': c', 'foo: bar', '日本', '😀', 'é', ' ', ':'),
  fc.string({ maxLength: 6 }),
);
const line = fc.array(piece, { maxLength: 5 }).map((p) => p.join('').replace(/[\r\n]/g, ''));
const stream = fc
  .tuple(fc.array(fc.tuple(line, fc.constantFrom('\n', '\r\n', '\r', '\n\n', '\r\n\r\n')), { maxLength: 30 }), fc.boolean())
  .map(([lines, bom]) => (bom ? '\ufeff' : '') + lines.map(([l, eol]) => l + eol).join(''));

describe('createFrameSplitter', () => {
  it('cuts complete blocks only, carrying the incomplete one to the next chunk', () => {
    const out = frames([bytes('data: a\n\ndata: b\n\nda'), bytes('ta: c\n\n')]);
    expect(out.map((f) => f.bytes.toString())).toEqual(['data: a\n\ndata: b\n\n', 'data: c\n\n']);
    expect(out.map((f) => f.events)).toEqual([2, 1]);
  });

  it('finds a blank line split across chunks', () => {
    expect(text(frames([bytes('data: a\n'), bytes('\ndata: b\n'), bytes('\n')]))).toBe('data: a\n\ndata: b\n\n');
  });

  it('drops an unterminated last block at the end (§9.2.6)', () => {
    expect(text(frames([bytes('data: a\n\ndata: b\n')]))).toBe('data: a\n\n');
  });

  it('keeps comments, id, retry and unknown fields byte for byte', () => {
    const input = ': hi\nid: 9\nretry: 50\nfoo: bar\ndata: x\n\n';
    expect(text(frames([bytes(input)]))).toBe(input);
  });

  it('rewrites CRLF and CR line ends to LF, also a CRLF split across chunks', () => {
    expect(text(frames([bytes('data: a\r'), bytes('\n\r\ndata: b\r\r')]))).toBe('data: a\n\ndata: b\n\n');
  });

  it('strips one leading BOM, also when split across chunks', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(text(frames([bom.subarray(0, 1), bom.subarray(1), bytes('data: a\n\n')]))).toBe('data: a\n\n');
    // Two BOMs: both kept, so a client (which strips one) still sees the unknown field `\ufeffdata`.
    expect(text(frames([Buffer.concat([bom, bom]), bytes('data: a\n\n')]))).toBe('\ufeff\ufeffdata: a\n\n');
  });

  it('replaces invalid UTF-8 with U+FFFD as a client decoder would, keeping a character split across chunks', () => {
    const euro = Buffer.from('€');
    const out = frames([Buffer.concat([bytes('data: '), euro.subarray(0, 2)]), Buffer.concat([euro.subarray(2), bytes('\n\ndata: \xff\n\n'.replace('\xff', '')), Buffer.from([0xff, 0x0a, 0x0a])])]);
    expect(text(out)).toBe('data: €\n\ndata: \n\n\ufffd\n\n');
    expect(Buffer.isBuffer(out[0]?.bytes)).toBe(true);
  });

  it('cuts frames of at most maxFrameBytes at block boundaries; a larger block is a frame of its own', () => {
    const big = `data: ${'x'.repeat(100)}\n\n`;
    const out = frames([bytes('data: a\n\n'.repeat(10) + big + 'data: b\n\n')], { maxFrameBytes: 32 });
    expect(out.every((f) => f.bytes.length <= 32 || f.bytes.toString() === big)).toBe(true);
    expect(out.map((f) => f.bytes.toString())).toContain(big);
    expect(out.reduce((n, f) => n + f.events, 0)).toBe(12);
  });

  it('signals SseLimitError for a block over maxEventBytes, complete or still arriving', () => {
    const errors: unknown[] = [];
    const s = createFrameSplitter({ maxEventBytes: 64, onFrame: () => undefined, onError: (e) => errors.push(e) });
    for (let i = 0; i < 10; i++) s.feed(bytes('data: 0123456789\n')); // 170 bytes, no blank line yet
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SseLimitError);
    expect(() => frames([bytes(`data: ${'y'.repeat(100)}\n\n`)], { maxEventBytes: 64 })).toThrow(SseLimitError);
  });

  it('ignores input after a limit error until reset()', () => {
    const out: SseFrame[] = [];
    const s = createFrameSplitter({ maxEventBytes: 16, onFrame: (f) => out.push(f), onError: () => undefined });
    s.feed(bytes('data: 0123456789abcdef\n'));
    s.feed(bytes('\ndata: a\n\n'));
    expect(out).toHaveLength(0);
    s.reset();
    s.feed(bytes('data: a\n\n'));
    expect(out).toHaveLength(1);
  });

  it('reports the bytes of the incomplete block it carries', () => {
    const s = createFrameSplitter({ onFrame: () => undefined });
    s.feed(bytes('data: a\n\ndata: partial'));
    expect(s.bufferedBytes()).toBe('data: partial'.length);
    s.feed(bytes('\n\n'));
    expect(s.bufferedBytes()).toBe(0);
  });

  it('sseFrames reports its queued frames and the carried block in `queued`', () => {
    const queued = { bytes: 0 };
    const source = createFlow<Uint8Array>((sink) => {
      sink.onRequest(() => sink.next(bytes('data: a\n\ndata: b\n\ndata: c')));
    });
    const subscription = source.pipe(sseFrames({ queued, maxFrameBytes: 10 })).subscribeWithDemand({});
    subscription.request(1); // one chunk in: frame 'data: a\n\n' out, 'data: b\n\n' queued, 'data: c' carried
    expect(queued.bytes).toBe('data: b\n\n'.length + 'data: c'.length);
    subscription.cancel();
    expect(queued.bytes).toBe(0);
  });

  it('holds a long block in one growing buffer (the carried bytes are not copied per chunk)', () => {
    const out = frames(Array.from({ length: 2000 }, () => bytes('data: 0123456789\n')).concat([bytes('\n')]), { maxEventBytes: 64 * 1024 });
    expect(out).toHaveLength(1);
    expect(out[0]?.bytes.length).toBe(2000 * 17 + 1);
  });

  it('property: a client parsing the frames sees exactly the events it sees parsing the input, for any chunking', () => {
    fc.assert(
      fc.property(
        stream.chain((s) => {
          // Ends with a blank line: a client applies a trailing block's comments and retry without it, the relay drops them (tested above).
          const wire = bytes(s + '\n\n');
          return fc.tuple(fc.constant(wire), cuts(wire.length), fc.integer({ min: 8, max: 64 }));
        }),
        ([wire, offsets, maxFrameBytes]) => {
          const out = frames(splitAt(wire, offsets), { maxFrameBytes });
          // Frames start and end at event boundaries: a relay may put its own events between them.
          const relayed = parseChunks(out.flatMap((f) => [f.bytes, HEARTBEAT]));
          const direct = parseChunks([wire]);
          expect(relayed.events).toEqual(direct.events);
          expect(relayed.retries).toEqual(direct.retries);
          expect(relayed.comments.filter((c) => c !== 'hb')).toEqual(direct.comments.filter((c) => c !== 'hb'));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('property: invalid bytes anywhere still give the client the same events', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), cuts(200), (raw, offsets) => {
        const input = Buffer.concat([Buffer.from(raw), bytes('\n\n')]);
        const out = frames(splitAt(input, offsets.filter((o) => o <= input.length)));
        expect(parseChunks(out.map((f) => f.bytes)).events).toEqual(parseChunks([input]).events);
        for (const f of out) expect(Buffer.from(f.bytes.toString('utf8'), 'utf8').equals(f.bytes)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
