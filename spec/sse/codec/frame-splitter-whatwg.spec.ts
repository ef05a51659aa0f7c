import fc from 'fast-check';
import { SseLimitError } from '../../../src/errors';
import { createFrameSplitter, type SseFrame } from '../../../src/sse';
import { clientEvents } from '../../harness/relay-harness';

// The byte relay's splitter against an independent WHATWG client (TextDecoder +
// eventsource-parser): what a client makes of the frames must equal what it makes of the input,
// at stream start and after heartbeats the relay may interleave.

/** Non-empty chunks of `bytes` cut at `cuts` (an empty chunk is its own spec below). */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    out.push(bytes.subarray(at, c));
    at = c;
  }
  out.push(bytes.subarray(at));
  return out;
}

function frames(chunks: Buffer[], options: { maxFrameBytes?: number; maxEventBytes?: number } = {}): SseFrame[] {
  const out: SseFrame[] = [];
  const splitter = createFrameSplitter({ ...options, onFrame: (f) => out.push(f) });
  for (const c of chunks) splitter.feed(Buffer.from(c)); // a copy: the splitter may keep views
  splitter.end();
  return out;
}

const PING = Buffer.from(': ping\n\n');

/** Raw bytes of an irregular event stream: CR/CRLF/LF, invalid UTF-8, BOMs anywhere, ids, comments. */
const piece = fc.oneof(
  fc.constantFrom('data: ', 'data:', 'data', 'event: x', 'event:error', 'id: 7', 'id: 8', 'id', 'retry: 10', ': c', 'foo: bar', '日本', '😀', ' ', ':', '[DONE]'),
  fc.string({ maxLength: 4 }).map((s) => s.replace(/[\r\n]/g, '')),
).map((s) => Buffer.from(s));
const rawPiece = fc.oneof(
  { weight: 8, arbitrary: piece },
  { weight: 2, arbitrary: fc.constantFrom('\n', '\r\n', '\r', '\n\n', '\r\r', '\r\n\r\n').map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.constantFrom([0xff], [0xe6, 0x97], [0xf0, 0x9f], [0xc3], [0x80, 0x80], [0xed, 0xa0, 0x80]).map((b) => Buffer.from(b)) },
);
const rawStream = fc.tuple(fc.boolean(), fc.array(rawPiece, { maxLength: 60 })).map(([bom, parts]) => Buffer.concat([bom ? Buffer.from('\ufeff') : Buffer.alloc(0), ...parts]));

describe('createFrameSplitter vs an independent WHATWG client', () => {
  it('a client parses the frames (each cut at any byte) exactly as it parses the input', () => {
    fc.assert(
      fc.property(
        rawStream.chain((b) => fc.tuple(fc.constant(b), fc.array(fc.integer({ min: 0, max: b.length }), { maxLength: 12 }), fc.integer({ min: 1, max: 64 }))),
        ([input, cuts, maxFrameBytes]) => {
          const out = frames(split(input, cuts), { maxFrameBytes });
          const expected = clientEvents(input);
          const joined = Buffer.concat(out.map((f) => f.bytes));
          expect(clientEvents(joined)).toEqual(expected);
        },
      ),
      { numRuns: 1500, seed: 0x7e3 },
    );
  });

  it('every frame ends with a blank line and heartbeats between frames change no event (BOM-free input)', () => {
    fc.assert(
      fc.property(
        rawStream.chain((b) => fc.tuple(fc.constant(b), fc.array(fc.integer({ min: 0, max: b.length }), { maxLength: 12 }))),
        ([input, cuts]) => {
          const out = frames(split(input, cuts), { maxFrameBytes: 16 });
          // Each frame ends at an event boundary (a lone "\n" after a cut "\n\n" is an empty line: fine).
          let sent = Buffer.alloc(0);
          for (const f of out) {
            sent = Buffer.concat([sent, f.bytes]);
            expect(sent.subarray(-2).toString()).toBe('\n\n');
          }
          for (const f of out) expect(Buffer.from(f.bytes.toString('utf8'), 'utf8').equals(f.bytes)).toBe(true); // valid UTF-8
          for (const f of out) expect(f.bytes.includes(0x0d)).toBe(false);
          // A heartbeat first means the client strips no BOM of ours: compare with the input's
          // own events (which strip the upstream's first BOM).
          const withPings = Buffer.concat([PING, ...out.flatMap((f) => [f.bytes, PING])]);
          expect(clientEvents(withPings)).toEqual(clientEvents(input));
        },
      ),
      { numRuns: 1500, seed: 0x7e4 },
    );
  });

  it('one endless line (no line end ever) fails at maxEventBytes, holding at most that much', () => {
    const errors: unknown[] = [];
    const splitter = createFrameSplitter({ onFrame: () => undefined, onError: (e) => errors.push(e), maxEventBytes: 64 * 1024 });
    const chunk = Buffer.alloc(1000, 0x61);
    let fed = 0;
    for (let i = 0; i < 200 && errors.length === 0; i++) {
      splitter.feed(chunk);
      fed += chunk.length;
    }
    expect(errors[0]).toBeInstanceOf(SseLimitError);
    expect(fed).toBeLessThanOrEqual(64 * 1024 + 1000);
  });

  it('a block over maxEventBytes completed in the chunk that ends it still fails (carried + tail)', () => {
    const errors: unknown[] = [];
    const got: SseFrame[] = [];
    const splitter = createFrameSplitter({ onFrame: (f) => got.push(f), onError: (e) => errors.push(e), maxEventBytes: 4096, maxFrameBytes: 1024 });
    splitter.feed(Buffer.from(`data: ${'x'.repeat(4000)}`)); // carried: under the limit
    splitter.feed(Buffer.from(`${'y'.repeat(3000)}\n\ndata: ok\n\n`)); // completes a 7 KB block
    expect(errors[0]).toBeInstanceOf(SseLimitError);
    expect(got.map((f) => f.bytes.length).every((n) => n <= 4096)).toBe(true);
  });

  // An empty chunk keeps a pending CR: the LF of a CRLF split around it is the same line end,
  // not a second one that would dispatch an event the upstream never completed.
  it('an empty chunk between the CR and LF of a CRLF keeps it one line end (no extra dispatch)', () => {
    const out = frames([Buffer.from('data: x\r'), Buffer.alloc(0), Buffer.from('\nmore')]);
    expect(Buffer.concat(out.map((f) => f.bytes)).toString()).toBe('');
  });

  // With two BOMs at stream start the splitter strips one and keeps the other: relaying
  // `\ufeffdata: a` first would let a client strip it as the stream's BOM and see an event the
  // upstream never sent.
  it('a second BOM at stream start does not turn an unknown field into an event', () => {
    const input = Buffer.from('\ufeff\ufeffdata: a\n\n');
    const out = frames([input]);
    expect(clientEvents(Buffer.concat(out.map((f) => f.bytes)))).toEqual(clientEvents(input));
  });
});
