import { SseLimitError } from '../../errors';
import { BOM, COLON, CR, LF, lineEnd } from './bytes';
import { HEAD_BYTES, isIgnoredLine } from './line-kind';
import { decodeUtf8, isAscii, mostlyNonAscii } from './utf8';

import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, type SseParser, type SseParserOptions } from './event';
import { EventFields } from './event-fields';

export { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES } from './event';
export type { SseEvent, SseParser, SseParserOptions } from './event';

/** A pending-line buffer grown past this is released after use instead of kept. */
const KEEP_PENDING_BYTES = 64 * 1024;
/** Chunks shorter than this are decoded line by line, without classifying the chunk first. */
const REGION_MIN_BYTES = 2048;

function checkLimit(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value === Infinity || (Number.isInteger(value) && value > 0))) {
    throw new RangeError(`createSseParser: ${name} must be a positive integer or Infinity, got ${String(value)}`);
  }
  return value;
}

/**
 * Creates a streaming parser for `text/event-stream` bytes, implementing the WHATWG HTML
 * "event stream interpretation" (§9.2.6, "Interpreting an event stream") exactly:
 * streaming UTF-8 decode (invalid sequences become U+FFFD, a character may be split across
 * chunks), one leading BOM stripped at stream start (also when split), LF / CRLF / CR line
 * ends (a CR ending one chunk and an LF starting the next are one line end), comments, fields
 * without a colon, one leading space stripped from values, `data` lines joined with LF,
 * events with no `data` not dispatched, `id` containing NUL ignored, `retry` only when all
 * ASCII digits, unknown fields ignored, and an event without its blank line dropped at `end()`.
 *
 * Lines are split on the bytes 0x0A/0x0D before decoding, and only complete lines are decoded
 * (field names are matched on bytes; values decoded once, line by line or per chunk region).
 * This equals decoding the whole stream first, because CR and LF never occur inside a valid
 * UTF-8 sequence and an invalid partial sequence before them becomes U+FFFD either way.
 * Not re-entrant: a callback must not call `feed()` of the same parser (it may call `reset()`).
 * Its methods are the parser's own: call them on it (`parser.feed(bytes)`), not detached.
 *
 * Limits: memory is bounded by `maxLineBytes` (pending line) plus `maxEventBytes` (data of the
 * event being built); exceeding either signals {@link SseLimitError} (`ERR_TIDEGATE_SSE_LIMIT`):
 * thrown from `feed()`, or passed to `onError` when given. The parser then stops until `reset()`.
 * Lines the spec ignores (unknown fields, comments nobody listens to) are skipped up to their
 * line end without being held, but their bytes count against `maxLineBytes` like any line's:
 * an endless ignored line is a limit error, not a stream read until some timeout.
 *
 * @example
 * const parser = createSseParser({ onEvent: (e) => console.log(e.type, e.data) });
 * parser.feed(new TextEncoder().encode('event: greet\ndata: hi\n\n')); // greet hi
 */
export function createSseParser(options: SseParserOptions): SseParser {
  if (options === null || typeof options !== 'object' || typeof options.onEvent !== 'function') {
    throw new TypeError('createSseParser: options.onEvent must be a function');
  }
  // The parser itself, no wrapper: a relayed stream holds its parser for its whole life, and a
  // wrapper of closures (with a getter, a dictionary-mode object) cost ~700 B of heap per stream.
  return new SseParserImpl(options);
}

/** The {@link SseParser} {@link createSseParser} returns. */
class SseParserImpl implements SseParser {
  private readonly onComment: ((comment: string) => void) | undefined;
  private readonly onError: ((error: SseLimitError) => void) | undefined;
  private readonly maxLineBytes: number;
  /** The event being built: field rules and dispatch. */
  private readonly fields: EventFields;

  /** Bytes of the incomplete line carried from earlier chunks (owned copy, never a view). */
  private pending: Buffer | null = null;
  private pendingLength = 0;
  /** BOM bytes matched so far at stream start (0..2), or -1 once the BOM check is over. */
  private bomMatched = 0;
  /** The previous chunk ended with CR: an LF first in the next chunk belongs to it. */
  private skipLF = false;
  /** The current line is ignored: its bytes up to the next line end are dropped unbuffered. */
  private skipping = false;
  /** Bytes of the ignored line seen so far, checked against `maxLineBytes`. */
  private skippedBytes = 0;
  /** Scratch copy of a held line's first bytes, to classify it across chunks. */
  private readonly head = Buffer.alloc(HEAD_BYTES);
  private failed = false;
  /** Bumped by reset/end/fail so a loop notices a callback changed the state under it. */
  private epoch = 0;

  constructor(options: SseParserOptions) {
    this.onComment = options.onComment;
    this.onError = options.onError;
    this.maxLineBytes = checkLimit('maxLineBytes', options.maxLineBytes, DEFAULT_MAX_LINE_BYTES);
    const lastEventId = options.lastEventId ?? '';
    if (typeof lastEventId !== 'string' || /[\r\n\0]/.test(lastEventId)) throw new TypeError('createSseParser: lastEventId must be a string without CR, LF or NUL');
    this.fields = new EventFields(options, checkLimit('maxEventBytes', options.maxEventBytes, DEFAULT_MAX_EVENT_BYTES), lastEventId, (error) => this.fail(error));
  }

  feed(chunk: Uint8Array | string): void {
    if (this.failed) return;
    let buf: Buffer;
    if (typeof chunk === 'string') buf = Buffer.from(chunk, 'utf8');
    else if (chunk instanceof Uint8Array) {
      buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    } else throw new TypeError('SseParser.feed: chunk must be a Uint8Array or a string');
    const n = buf.length;
    if (n === 0) return;
    const epoch = this.epoch;
    let pos = 0;

    if (this.bomMatched >= 0) {
      // §9.2.6 decodes with "UTF-8 decode", which strips one leading BOM (EF BB BF).
      let m = this.bomMatched;
      while (m < 3 && pos < n && buf[pos] === BOM[m]) {
        m++;
        pos++;
      }
      if (m === 3) {
        this.bomMatched = -1;
      } else if (pos === n) {
        this.bomMatched = m; // all BOM bytes so far: wait for more
        return;
      } else {
        // Not a BOM: bytes held from earlier chunks are ordinary line bytes.
        const held = this.bomMatched;
        this.bomMatched = -1;
        pos = 0;
        if (held > 0) {
          this.hold(BOM, 0, held);
          if (this.epoch !== epoch) return;
        }
      }
      if (pos === n) return;
    }

    if (this.skipLF) {
      this.skipLF = false;
      if (buf[pos] === LF) {
        pos++;
        if (pos === n) return;
      }
    }

    if (this.skipping || this.pendingLength > 0) {
      // The first line end completes the line carried over from earlier chunks.
      const end = lineEnd(buf, pos);
      if (end === -1) {
        if (!this.skipping) this.hold(buf, pos, n);
        else {
          this.skippedBytes += n - pos;
          if (this.skippedBytes > this.maxLineBytes) this.fail(new SseLimitError('line', this.maxLineBytes));
        }
        return;
      }
      const length = (this.skipping ? this.skippedBytes : this.pendingLength) + (end - pos);
      if (length > this.maxLineBytes) {
        this.fail(new SseLimitError('line', this.maxLineBytes));
        return;
      }
      if (this.skipping) this.skipping = false;
      else {
        this.appendPending(buf, pos, end);
        const line = this.pending as Buffer;
        const len = this.pendingLength;
        this.pendingLength = 0;
        if (line.length > KEEP_PENDING_BYTES) this.pending = null;
        this.fields.line(line, 0, len, null, 0, 0, false);
        if (this.epoch !== epoch) return;
      }
      pos = end + 1;
      if (buf[end] === CR) {
        // CRLF is one line end, also when the LF arrives in the next chunk.
        if (pos === n) this.skipLF = true;
        else if (buf[pos] === LF) pos++;
      }
      if (pos === n) return;
    }

    // Large chunks: the complete lines form one region, classified once (ASCII, CJK-heavy or
    // mixed) to pick the fastest exact decoder; small chunks decode line by line.
    let text: string | null = null;
    let ascii = false;
    if (n - pos >= REGION_MIN_BYTES) {
      const lastLF = buf.lastIndexOf(LF);
      const lastCR = buf.lastIndexOf(CR);
      const regionEnd = (lastLF > lastCR ? lastLF : lastCR) + 1;
      if (regionEnd > pos) {
        if (isAscii(buf.subarray(pos, regionEnd))) ascii = true;
        else if (mostlyNonAscii(buf, pos, regionEnd)) text = decodeUtf8(buf, pos, regionEnd);
      }
    }
    pos = this.processLines(buf, pos, text, ascii, epoch);
    if (pos < n && this.epoch === epoch) this.hold(buf, pos, n);
  }

  /**
   * Runs the line rules on every complete line of `buf` from `pos`; returns where the
   * incomplete rest starts. `text`, when given, is the decoded region of complete lines from
   * `pos`; `ascii` says that region is ASCII.
   */
  private processLines(buf: Buffer, pos: number, text: string | null, ascii: boolean, epoch: number): number {
    const n = buf.length;
    const maxLine = this.maxLineBytes;
    // CR and LF map 1:1 to U+000D and U+000A and every field prefix (`data:`, `:` …) is ASCII,
    // so byte offsets within a line's ASCII prefix equal string offsets from the line start.
    let cpos = 0;
    let nextLFc = -1;
    let nextCRc = -1;
    let nextLF = -1;
    let nextCR = -1;
    for (;;) {
      // Cached next-LF/next-CR positions keep the scan linear in the chunk length.
      if (nextLF < pos) {
        nextLF = buf.indexOf(LF, pos);
        if (nextLF === -1) nextLF = n;
      }
      if (nextCR < pos) {
        nextCR = buf.indexOf(CR, pos);
        if (nextCR === -1) nextCR = n;
      }
      const end = nextLF < nextCR ? nextLF : nextCR;
      if (end === n) return pos;
      if (end - pos > maxLine) {
        this.fail(new SseLimitError('line', maxLine));
        return n;
      }
      let cend = 0;
      if (text !== null) {
        if (nextLFc < cpos) {
          nextLFc = text.indexOf('\n', cpos);
          if (nextLFc === -1) nextLFc = text.length;
        }
        if (nextCRc < cpos) {
          nextCRc = text.indexOf('\r', cpos);
          if (nextCRc === -1) nextCRc = text.length;
        }
        cend = nextLFc < nextCRc ? nextLFc : nextCRc;
      }
      this.fields.line(buf, pos, end, text, cpos, cend, ascii);
      if (this.epoch !== epoch) return n;
      pos = end + 1;
      cpos = cend + 1;
      if (end === nextCR) {
        // CRLF is one line end, also when the LF arrives in the next chunk.
        if (pos === n) this.skipLF = true;
        else if (buf[pos] === LF) {
          pos++;
          cpos++;
        }
      }
      if (pos === n) return n;
    }
  }

  get heldBytes(): number {
    return this.pendingLength + this.fields.heldBytes;
  }

  end(): void {
    if (this.failed) return;
    // §9.2.6: "Once the end of the file is reached, any pending data must be discarded."
    this.reset();
  }

  reset(): void {
    this.epoch++;
    this.pending = null;
    this.pendingLength = 0;
    this.bomMatched = 0;
    this.skipLF = false;
    this.skipping = false;
    this.skippedBytes = 0;
    this.fields.reset();
    this.failed = false;
  }

  /**
   * Holds `src[start, end)`, the start or continuation of a line not yet ended. A line past
   * `maxLineBytes` fails the parser, whatever its kind. While the line's first bytes are still
   * being read it is classified: a line the parser would ignore is dropped and the rest of it
   * skipped unbuffered (its bytes still counted).
   */
  private hold(src: Buffer, start: number, end: number): void {
    const length = this.pendingLength + (end - start);
    if (length > this.maxLineBytes) {
      this.fail(new SseLimitError('line', this.maxLineBytes));
      return;
    }
    if (this.pendingLength < HEAD_BYTES && this.skippable(src, start, end, false)) {
      this.dropPending();
      this.skipping = true;
      this.skippedBytes = length;
      return;
    }
    this.appendPending(src, start, end);
  }

  /**
   * Whether the line made of the held bytes plus `src[start, end)` can be dropped: it is ignored
   * by §9.2.6, unless it is a comment that `onComment` wants.
   */
  private skippable(src: Buffer, start: number, end: number, complete: boolean): boolean {
    const held = this.pendingLength;
    const total = held + (end - start);
    let head: Uint8Array = src;
    let from = start;
    let length = Math.min(HEAD_BYTES, end - start);
    if (held > 0) {
      const pending = this.pending as Buffer;
      head = this.head;
      from = 0;
      length = Math.min(HEAD_BYTES, total);
      const fromPending = Math.min(held, length);
      pending.copy(this.head, 0, 0, fromPending);
      if (fromPending < length) src.copy(this.head, fromPending, start, start + (length - fromPending));
    }
    if (!isIgnoredLine(head, from, length, total, complete)) return false;
    return head[from] !== COLON || this.onComment === undefined;
  }

  /** Forgets the held line bytes (releasing a grown buffer). */
  private dropPending(): void {
    if (this.pending !== null && this.pending.length > KEEP_PENDING_BYTES) this.pending = null;
    this.pendingLength = 0;
  }

  /** Appends to the held line; the caller checked `maxLineBytes`. */
  private appendPending(src: Buffer, start: number, end: number): void {
    const length = this.pendingLength + (end - start);
    let pending = this.pending;
    if (pending === null || pending.length < length) {
      const grown = Math.min(this.maxLineBytes, Math.max(256, length, pending === null ? 0 : pending.length * 2));
      const next = Buffer.allocUnsafe(grown);
      if (pending !== null && this.pendingLength > 0) pending.copy(next, 0, 0, this.pendingLength);
      this.pending = pending = next;
    }
    src.copy(pending, this.pendingLength, start, end);
    this.pendingLength = length;
  }

  private fail(error: SseLimitError): void {
    this.reset();
    this.failed = true;
    if (this.onError === undefined) throw error;
    this.onError(error);
  }
}
