import fc from 'fast-check';
import { responsesAdapter } from '../../src/providers';
import { lastSequence, responsesNeedsDecode, WALK_MAX_BYTES } from '../../src/providers/responses-scan';
import { createSseParser, type SseEvent } from '../../src/sse';

// `responsesNeedsDecode` against the Responses decoder itself: whenever a frame holds a block the
// decoder reads as a terminal event or an error, the scan must say "decode" (on the walked small
// frames and the needle-searched large ones alike); when it says "relay", the sequence it keeps
// is the frame's last `sequence_number`.

const NAMES = ['response.output_text.delta', 'response.completed', 'response.incomplete', 'response.failed', 'error', 'message', 'response.in_progress', 'errors', 'response.completed.x', 'x.error'];
const DELTA = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":3,"delta":"${'文'.repeat(30)}"}\n\n`;

/** `s` with one of its letters written as a `\u00XX` escape (JSON strings only). */
const escapeOne = (s: string, at: number): string => {
  const i = at % s.length;
  return /[a-z]/.test(s[i] as string) ? `${s.slice(0, i)}\\u00${s.charCodeAt(i).toString(16)}${s.slice(i + 1)}` : s;
};

const eventLine = fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom('event: ', 'event:', 'event:  ', 'event', 'eventx: ')).map(([name, head]) => (head === 'event' ? 'event' : head + name));
const dataLine = fc
  .record({ type: fc.option(fc.constantFrom(...NAMES), { nil: undefined }), seq: fc.option(fc.nat(1000), { nil: undefined }), escapeAt: fc.option(fc.nat(40), { nil: undefined }), head: fc.constantFrom('data: ', 'data:') })
  .map(({ type, seq, escapeAt, head }) => {
    const body: Record<string, unknown> = {};
    if (type !== undefined) body.type = type;
    if (seq !== undefined) body.sequence_number = seq;
    body.delta = 'x';
    let json = JSON.stringify(body);
    if (type !== undefined && escapeAt !== undefined) json = json.replace(`"${type}"`, `"${escapeOne(type, escapeAt)}"`);
    return head + json;
  });
const otherLine = fc.constantFrom(': comment', 'id: 7', 'retry: 10', 'data', ': event: error');
const block = fc.array(fc.oneof({ arbitrary: eventLine, weight: 2 }, { arbitrary: dataLine, weight: 3 }, { arbitrary: otherLine, weight: 1 }), { minLength: 1, maxLength: 4 }).map((lines) => `${lines.join('\n')}\n\n`);
const frame = fc.tuple(fc.array(block, { minLength: 1, maxLength: 4 }), fc.nat(60), fc.boolean()).map(([blocks, pad, large]) => Buffer.from(DELTA.repeat(large ? pad + Math.ceil(WALK_MAX_BYTES / DELTA.length) : pad % 3) + blocks.join('')));

/** The decoder's reading of each event of `bytes`: the GatewayEvent types. */
function decoded(bytes: Buffer): string[] {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (e) => events.push(e) });
  parser.feed(bytes);
  const decode = responsesAdapter.decoder();
  return events.map((e) => decode(e).type);
}

describe('responsesNeedsDecode', () => {
  it('says "decode" for every frame holding a terminal or error event (random blocks, small and large frames)', () => {
    fc.assert(
      fc.property(frame, (bytes) => {
        const types = decoded(bytes);
        const state = { sequence: -1 };
        const needs = responsesNeedsDecode(bytes, state);
        if (types.includes('done') || types.includes('error')) expect(needs).toBe(true);
        if (!needs) expect(state.sequence).toBe(lastSequence(bytes) ?? -1);
      }),
      { numRuns: 3000, seed: 18 },
    );
  });

  it('relays plain delta frames of either size, keeping their last sequence number', () => {
    for (const n of [1, 3, 40]) {
      const bytes = Buffer.from(DELTA.repeat(n - 1) + DELTA.replace('"sequence_number":3', `"sequence_number":${n + 10}`));
      expect(bytes.length > WALK_MAX_BYTES).toBe(n === 40);
      const state = { sequence: 5 };
      expect(responsesNeedsDecode(bytes, state)).toBe(false);
      expect(state.sequence).toBe(n + 10);
    }
  });

  it('keeps the larger sequence number it already had', () => {
    const state = { sequence: 50 };
    expect(responsesNeedsDecode(Buffer.from(DELTA), state)).toBe(false);
    expect(state.sequence).toBe(50);
  });

  it.each([
    ['event: response.completed', 'event: response.completed\ndata: {"type":"response.completed"}\n\n'],
    ['event:error', 'event:error\ndata: {}\n\n'],
    ['event: message', 'event: message\ndata: {"type":"response.output_text.delta"}\n\n'],
    ['an empty event name', 'event:\ndata: {"type":"response.output_text.delta"}\n\n'],
    ['a data-only block', 'data: {"type":"response.output_text.delta"}\n\n'],
  ])('says "decode" for %s, also after a plain block', (_name, text) => {
    expect(responsesNeedsDecode(Buffer.from(DELTA + text), { sequence: -1 })).toBe(true);
  });

  it('relays a comment-only frame', () => {
    expect(responsesNeedsDecode(Buffer.from(': keep-alive\n\n'), { sequence: -1 })).toBe(false);
  });
});

describe('responsesAdapter.forStream', () => {
  it('gives a stream every field of the shared adapter, with its own stateful ones', () => {
    const stream = responsesAdapter.forStream?.() as typeof responsesAdapter;
    for (const key of Object.keys(responsesAdapter) as (keyof typeof responsesAdapter)[]) {
      if (key === 'decoder' || key === 'formatError') expect(typeof stream[key]).toBe('function');
      else expect(stream[key]).toBe(responsesAdapter[key]);
    }
    expect(typeof stream.observe).toBe('function');
    expect(typeof stream.needsDecode).toBe('function');
    // Two streams of the same route share one object shape (an object literal, not a spread).
    expect(Object.keys(responsesAdapter.forStream?.() as object)).toEqual(Object.keys(stream));
  });
});
