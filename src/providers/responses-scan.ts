import { hasAsciiEscape } from './wire';

// The byte relay's check of a Responses frame (whole event blocks, LF line ends, valid UTF-8):
// does it hold an event the adapter must decode (a terminal event or an error), and what is the
// last `sequence_number` in it. The adapter's decoder types an event by its `event:` field, or by
// its JSON `type` when it has none (or names `message`); it must see `response.completed`,
// `response.incomplete`, `response.failed` and `error`.

const LF = 0x0a;
const COLON = 0x3a;
const SPACE = 0x20;
const QUOTE = 0x22;

/**
 * Frames up to this size are walked block by block in JS (two `indexOf(LF)` per block); larger
 * ones are searched natively for needles, whose per-call cost a small frame would not amortise.
 */
export const WALK_MAX_BYTES = 2048;

/** `event:` values that make a block need a decode: the terminal events, `error`, and `message` (typed by its JSON). */
const DECODE_NAMES = ['response.completed', 'response.incomplete', 'response.failed', 'error', 'message'].map((s) => Buffer.from(s));

// Substrings every block typed terminal or `error` holds, by its `event:` line or its JSON `type`
// (a name spelt with JSON escapes is caught by `hasAsciiEscape`): `mplete` for `.completed` and
// `.incomplete`, `failed`, `rror`. Native search stops at every occurrence of a needle's first
// byte, so each starts with a byte rare in the stream's own field names (`.` and `c` are in
// every event's name and keys: `.completed` cost seven times `mplete`).
const NEEDLES = [Buffer.from('failed'), Buffer.from('mplete'), Buffer.from('rror')];

const SEQUENCE_NEEDLE = Buffer.from('"sequence_number":');
const TYPE_HEAD = Buffer.from('{"type":"');
const SEQUENCE_KEY = Buffer.from(',"sequence_number":');

/** A walk's answer when a block must be decoded (a value < 0 other than {@link NO_EVENT}). */
const UNSURE = -1;
/** A walk's answer when no block dispatches an event (comments, blank lines). */
const NO_EVENT = -2;

/** What one stream's scan keeps: the largest `sequence_number` seen (-1 before any). */
export interface SequenceState {
  sequence: number;
}

/**
 * True when `frame` may hold an event the Responses decoder must see (see the module comment).
 * A false `true` only costs a decode; a `false` is exact: every block has an `event:` line
 * naming another event, or the frame holds none of the needles' bytes and no ASCII `\u00XX`
 * escape. On `false`, raises `state.sequence` to the frame's last `sequence_number`; on `true`
 * the decoder numbers the blocks it reads, and none after an error or a terminal event, which
 * the client never gets.
 */
export function responsesNeedsDecode(frame: Buffer, state: SequenceState): boolean {
  if (frame.length <= WALK_MAX_BYTES) {
    const data = walkBlocks(frame);
    if (data === UNSURE) return true;
    if (data === NO_EVENT) return false;
    raise(state, sequenceAt(frame, data) ?? lastSequence(frame));
    return false;
  }
  for (const needle of NEEDLES) if (frame.indexOf(needle) !== -1) return true;
  if (hasAsciiEscape(frame)) return true;
  raise(state, lastSequence(frame));
  return false;
}

function raise(state: SequenceState, seq: number | undefined): void {
  if (seq !== undefined && seq > state.sequence) state.sequence = seq;
}

/**
 * Walks the blocks of a frame line by line, as a WHATWG parser would type them: {@link UNSURE}
 * when a block that dispatches an event (it has a `data` line) has no `event` field, an empty
 * one, or one naming a {@link DECODE_NAMES} entry (the last `event` line counts); else the offset
 * of the last dispatching block's last data line's value, or {@link NO_EVENT}.
 */
function walkBlocks(frame: Buffer): number {
  const n = frame.length;
  let last = NO_EVENT;
  let p = 0;
  while (p < n) {
    let nameStart = -1;
    let nameEnd = -1;
    let data = -1;
    while (p < n && frame[p] !== LF) {
      const nl = frame.indexOf(LF, p);
      if (nl === -1) return UNSURE; // not whole blocks: let the decoder judge
      const c = frame[p];
      if (c === 0x64 && frame[p + 1] === 0x61 && frame[p + 2] === 0x74 && frame[p + 3] === 0x61 && (p + 4 === nl || frame[p + 4] === COLON)) {
        // `data`: the field value starts after the colon and one optional space.
        data = p + 4 === nl ? nl : frame[p + 5] === SPACE ? p + 6 : p + 5;
      } else if (c === 0x65 && frame[p + 1] === 0x76 && frame[p + 2] === 0x65 && frame[p + 3] === 0x6e && frame[p + 4] === 0x74 && (p + 5 === nl || frame[p + 5] === COLON)) {
        // `event`: the last one of the block names it.
        nameStart = p + 5 === nl ? nl : frame[p + 6] === SPACE ? p + 7 : p + 6;
        nameEnd = nl;
      }
      p = nl + 1;
    }
    p++; // the blank line
    if (data === -1) continue; // no data: the block dispatches nothing
    if (nameStart === -1 || isDecodeName(frame, nameStart, nameEnd)) return UNSURE;
    last = data;
  }
  return last;
}

/** True when `frame[start, end)` is empty or one of {@link DECODE_NAMES}. */
function isDecodeName(frame: Buffer, start: number, end: number): boolean {
  const length = end - start;
  if (length <= 0) return true;
  for (const name of DECODE_NAMES) {
    if (name.length !== length) continue;
    let i = 0;
    while (i < length && frame[start + i] === name[i]) i++;
    if (i === length) return true;
  }
  return false;
}

/** True when `frame` holds `bytes` at `at`. */
function hasAt(frame: Buffer, at: number, bytes: Buffer): boolean {
  if (at + bytes.length > frame.length) return false;
  for (let i = 0; i < bytes.length; i++) if (frame[at + i] !== bytes[i]) return false;
  return true;
}

/**
 * The `sequence_number` of a data value laid out as the API sends it,
 * `{"type":"<name>","sequence_number":<n>,…`, read in place; `undefined` for another layout.
 */
function sequenceAt(frame: Buffer, at: number): number | undefined {
  if (!hasAt(frame, at, TYPE_HEAD)) return undefined;
  let i = at + TYPE_HEAD.length;
  const stop = Math.min(frame.length, i + 64);
  while (i < stop && frame[i] !== QUOTE && frame[i] !== 0x5c /* \ */ && frame[i] !== LF) i++;
  if (frame[i] !== QUOTE || !hasAt(frame, i + 1, SEQUENCE_KEY)) return undefined;
  return digitsAt(frame, i + 1 + SEQUENCE_KEY.length);
}

/** The non-negative integer written at `i` (up to 15 digits), or `undefined`. */
function digitsAt(frame: Buffer, i: number): number | undefined {
  let n = 0;
  let digits = 0;
  for (; (frame[i] as number) >= 0x30 && (frame[i] as number) <= 0x39 && digits < 15; i++, digits++) n = n * 10 + ((frame[i] as number) - 0x30);
  return digits > 0 ? n : undefined;
}

/** The last `sequence_number` value in `bytes`, or `undefined` (a native scan and a few digits). */
export function lastSequence(bytes: Buffer): number | undefined {
  const at = bytes.lastIndexOf(SEQUENCE_NEEDLE);
  if (at === -1) return undefined;
  let i = at + SEQUENCE_NEEDLE.length;
  while (bytes[i] === SPACE) i++;
  return digitsAt(bytes, i);
}
