import * as nodeBuffer from 'buffer';
import { SseLimitError } from '../../errors';

/**
 * One dispatched server-sent event, as the WHATWG HTML "event stream interpretation"
 * (§9.2.6) builds it: `type` is the `event` field or `"message"`, `data` is the `data` lines
 * joined with LF (final LF removed), `lastEventId` is the last event ID buffer at dispatch
 * (it persists across events until an `id` field changes it).
 */
export interface SseEvent {
  /** The event type: the last `event` field value, or `"message"` when none or empty. */
  type: string;
  /** The `data` field values joined with `"\n"`. */
  data: string;
  /** The last event ID buffer at dispatch time (`""` until an `id` field sets it). */
  lastEventId: string;
}

/** Options for {@link createSseParser}. */
export interface SseParserOptions {
  /** Called once per dispatched event, synchronously inside `feed()`. */
  onEvent: (event: SseEvent) => void;
  /** Called with the reconnection time in ms for each `retry` field whose value is all ASCII digits. */
  onRetry?: ((retryMs: number) => void) | undefined;
  /** Called with the text of each comment line (after the `:`, one leading space removed). */
  onComment?: ((comment: string) => void) | undefined;
  /**
   * Called at a dispatch (blank line) whose last event ID buffer differs from the value last
   * reported, before that dispatch's event, and also when no event is dispatched because the data
   * is empty: §9.2.6 "dispatch the event" step 1 sets the source's last event ID string either
   * way, so an `id:`-only block still moves the `Last-Event-ID` a client resumes from.
   */
  onLastEventId?: ((lastEventId: string) => void) | undefined;
  /**
   * Largest line the parser uses, in bytes, line terminator excluded. Default
   * {@link DEFAULT_MAX_LINE_BYTES} (1 MiB). A longer `data`, `event`, `id` or `retry` line
   * signals {@link SseLimitError} (`limit: 'line'`) as soon as its pending bytes exceed the
   * limit, before its end arrives. Lines §9.2.6 ignores are skipped whatever their length,
   * without being buffered: unknown fields (once their first bytes cannot start
   * `data:`/`event:`/`id:`/`retry:` or one of these names alone), comments when `onComment` is
   * not given, and comments longer than this limit (`onComment` is not called for those).
   */
  maxLineBytes?: number | undefined;
  /**
   * Largest event data accepted, in input bytes: the `data` values of one event plus the LFs
   * joining them. Default {@link DEFAULT_MAX_EVENT_BYTES} (1 MiB). Exceeding it signals
   * {@link SseLimitError} (`limit: 'event'`).
   */
  maxEventBytes?: number | undefined;
  /**
   * Receives a limit error instead of `feed()` throwing it. Either way the parser stops:
   * later `feed()`/`end()` calls are ignored until `reset()`.
   */
  onError?: ((error: SseLimitError) => void) | undefined;
}

/** A streaming event-stream parser: bytes in, callbacks out, no I/O. */
export interface SseParser {
  /**
   * Parses the next chunk of the stream. A chunk may end anywhere: inside a UTF-8 sequence, a
   * BOM, a line, or between the CR and LF of a CRLF. Callbacks run synchronously; an exception
   * thrown by a callback propagates and the rest of that chunk is not parsed. A string chunk is
   * UTF-8 encoded first (so split surrogate pairs are not rejoined: feed bytes for exactness).
   *
   * @throws {SseLimitError} when a limit is exceeded and no `onError` option was given.
   */
  feed(chunk: Uint8Array | string): void;
  /**
   * Marks the end of the stream: a pending incomplete line and an event without its final
   * blank line are discarded, never dispatched (§9.2.6). The parser is then back at its initial
   * state, ready for a new stream (BOM check and all buffers reset).
   */
  end(): void;
  /** Drops all state, including the last event ID and a stopped (failed) state. */
  reset(): void;
}

/** Default {@link SseParserOptions.maxLineBytes}: 1 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
/** Default {@link SseParserOptions.maxEventBytes}: 1 MiB. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
/** The field names the parser acts on, each followed by the colon that may end it. */
const FIELD_PREFIXES = ['data:', 'event:', 'id:', 'retry:'].map((f) => Buffer.from(f, 'latin1'));
/** Bytes of a line's start that decide whether it names one of {@link FIELD_PREFIXES}. */
const HEAD_BYTES = 7;
/** A pending-line buffer grown past this is released after use instead of kept. */
const KEEP_PENDING_BYTES = 64 * 1024;
/** Chunks shorter than this are decoded line by line, without classifying the chunk first. */
const REGION_MIN_BYTES = 2048;

type Slicer = (this: Buffer, start: number, end: number) => string;
const proto = Buffer.prototype as unknown as { latin1Slice?: Slicer; ucs2Slice?: Slicer; utf8Slice?: Slicer };
const utf8Slice: Slicer =
  proto.utf8Slice ??
  function (this: Buffer, start: number, end: number): string {
    return this.toString('utf8', start, end);
  };
// Buffer#latin1Slice/#ucs2Slice are what Buffer#toString('latin1'/'utf16le') call after argument checks.
const latin1Slice: Slicer =
  proto.latin1Slice ??
  function (this: Buffer, start: number, end: number): string {
    return this.toString('latin1', start, end);
  };
const ucs2Slice: Slicer =
  proto.ucs2Slice ??
  function (this: Buffer, start: number, end: number): string {
    return this.toString('utf16le', start, end);
  };
const isAscii: (input: Uint8Array) => boolean = nodeBuffer.isAscii ?? (() => false);
const transcode = typeof nodeBuffer.transcode === 'function' && process.versions.icu !== undefined ? nodeBuffer.transcode : undefined;
/** WHATWG "UTF-8 decode without BOM" (a mid-stream U+FEFF is content): U+FFFD per maximal subpart. */
const lenientDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/**
 * Decodes complete lines (the range never ends inside a character). Valid UTF-8 goes through
 * ICU's transcoder, several times faster than V8's decoder on CJK text; ICU rejects invalid
 * input, which then takes the WHATWG TextDecoder (U+FFFD replacement).
 */
function decodeUtf8(buf: Buffer, start: number, end: number): string {
  const bytes = buf.subarray(start, end);
  if (transcode !== undefined) {
    try {
      const utf16 = transcode(bytes, 'utf8', 'utf16le');
      return ucs2Slice.call(utf16, 0, utf16.length);
    } catch {
      // invalid UTF-8: replaced below
    }
  }
  return lenientDecoder.decode(bytes);
}

/**
 * Decodes one line's value. V8's decoder (Buffer#utf8Slice, WHATWG-conformant: U+FFFD per
 * maximal subpart) is fastest on mostly-ASCII text; long CJK-heavy lines go through ICU.
 */
function decodeLine(buf: Buffer, start: number, end: number, ascii: boolean): string {
  if (ascii) return latin1Slice.call(buf, start, end);
  if (end - start >= 256 && mostlyNonAscii(buf, start, end)) return decodeUtf8(buf, start, end);
  return utf8Slice.call(buf, start, end);
}

/**
 * A speed heuristic only (both decoders give identical strings): samples three 32-byte windows
 * and says whether at least a quarter of their bytes are non-ASCII.
 */
function mostlyNonAscii(buf: Buffer, start: number, end: number): boolean {
  if (transcode === undefined) return false;
  const length = end - start;
  if (length < 96) return false;
  let high = 0;
  for (let w = 1; w <= 3; w++) {
    const from = start + ((length * w) >> 2) - 16;
    for (let i = from; i < from + 32; i++) if ((buf[i] as number) >= 0x80) high++;
  }
  return high >= 24;
}

/**
 * Whether a line whose bytes start with `head[0, length)` is ignored by §9.2.6 whatever
 * follows: a comment (leading `:`), or a field other than data/event/id/retry. `total` is the
 * line length seen so far (`length` is at most {@link HEAD_BYTES} of it); `complete` says the
 * line ended there, so a name without a colon is the whole line.
 */
function isIgnoredLine(head: Uint8Array, start: number, length: number, total: number, complete: boolean): boolean {
  if (total === 0) return false; // a blank line dispatches
  if (head[start] === COLON) return true;
  for (const prefix of FIELD_PREFIXES) {
    const nameLength = prefix.length - 1;
    if (complete) {
      // Exactly the name, or the name followed by its colon.
      if (total < nameLength) continue;
      const k = total === nameLength ? nameLength : nameLength + 1;
      if (matchesPrefix(head, start, prefix, k)) return false;
    } else if (matchesPrefix(head, start, prefix, Math.min(length, prefix.length))) {
      return false; // could still become this field
    }
  }
  return true;
}

function matchesPrefix(head: Uint8Array, start: number, prefix: Buffer, k: number): boolean {
  for (let i = 0; i < k; i++) if (head[start + i] !== prefix[i]) return false;
  return true;
}

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
 *
 * Limits: memory is bounded by `maxLineBytes` (pending line) plus `maxEventBytes` (data of the
 * event being built); exceeding either signals {@link SseLimitError} (`ERR_TIDEGATE_SSE_LIMIT`):
 * thrown from `feed()`, or passed to `onError` when given. The parser then stops until `reset()`.
 * Lines the spec ignores (unknown fields, comments nobody listens to, comments past the limit)
 * are skipped up to their line end without being held, so padding of any length is harmless.
 *
 * @example
 * const parser = createSseParser({ onEvent: (e) => console.log(e.type, e.data) });
 * parser.feed(new TextEncoder().encode('event: greet\ndata: hi\n\n')); // greet hi
 */
export function createSseParser(options: SseParserOptions): SseParser {
  if (options === null || typeof options !== 'object' || typeof options.onEvent !== 'function') {
    throw new TypeError('createSseParser: options.onEvent must be a function');
  }
  const impl = new SseParserImpl(options);
  return {
    feed: (chunk) => impl.feed(chunk),
    end: () => impl.end(),
    reset: () => impl.reset(),
  };
}

class SseParserImpl {
  private readonly onEvent: (event: SseEvent) => void;
  private readonly onRetry: ((retryMs: number) => void) | undefined;
  private readonly onComment: ((comment: string) => void) | undefined;
  private readonly onLastEventId: ((lastEventId: string) => void) | undefined;
  /** The last event ID last handed to `onLastEventId`. */
  private reportedLastEventId = '';
  private readonly onError: ((error: SseLimitError) => void) | undefined;
  private readonly maxLineBytes: number;
  private readonly maxEventBytes: number;

  /** Bytes of the incomplete line carried from earlier chunks (owned copy, never a view). */
  private pending: Buffer | null = null;
  private pendingLength = 0;
  /** BOM bytes matched so far at stream start (0..2), or -1 once the BOM check is over. */
  private bomMatched = 0;
  /** The previous chunk ended with CR: an LF first in the next chunk belongs to it. */
  private skipLF = false;
  private data = '';
  private dataLines = 0;
  private dataBytes = 0;
  private eventType = '';
  private lastEventId = '';
  /** The current line is ignored: its bytes up to the next line end are dropped unbuffered. */
  private skipping = false;
  /** Scratch copy of a held line's first bytes, to classify it across chunks. */
  private readonly head = Buffer.alloc(HEAD_BYTES);
  private failed = false;
  /** Bumped by reset/end/fail so a loop notices a callback changed the state under it. */
  private epoch = 0;

  constructor(options: SseParserOptions) {
    this.onEvent = options.onEvent;
    this.onRetry = options.onRetry;
    this.onComment = options.onComment;
    this.onLastEventId = options.onLastEventId;
    this.onError = options.onError;
    this.maxLineBytes = checkLimit('maxLineBytes', options.maxLineBytes, DEFAULT_MAX_LINE_BYTES);
    this.maxEventBytes = checkLimit('maxEventBytes', options.maxEventBytes, DEFAULT_MAX_EVENT_BYTES);
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
          this.hold(BOM_BUFFER, 0, held);
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
      let end = buf.indexOf(LF, pos);
      const cr = buf.indexOf(CR, pos);
      if (cr !== -1 && (end === -1 || cr < end)) end = cr;
      if (end === -1) {
        if (!this.skipping) this.hold(buf, pos, n);
        return;
      }
      if (this.skipping) this.skipping = false;
      else if (this.pendingLength + (end - pos) > this.maxLineBytes && !this.skippable(buf, pos, end, true)) {
        this.fail(new SseLimitError('line', this.maxLineBytes));
        return;
      } else if (this.pendingLength + (end - pos) > this.maxLineBytes) {
        this.dropPending();
      } else {
        this.appendPending(buf, pos, end);
        const line = this.pending as Buffer;
        const len = this.pendingLength;
        this.pendingLength = 0;
        if (line.length > KEEP_PENDING_BYTES) this.pending = null;
        this.processLine(line, 0, len, null, 0, 0, false);
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
      const tooLong = end - pos > maxLine;
      if (tooLong && !this.skippable(buf, pos, end, true)) {
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
      if (!tooLong) {
        this.processLine(buf, pos, end, text, cpos, cend, ascii);
        if (this.epoch !== epoch) return n;
      }
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
    this.data = '';
    this.dataLines = 0;
    this.dataBytes = 0;
    this.eventType = '';
    this.lastEventId = '';
    this.reportedLastEventId = '';
    this.failed = false;
  }

  /**
   * Holds `src[start, end)`, the start or continuation of a line not yet ended. While the
   * line's first bytes are still being read, or once it outgrows `maxLineBytes`, it is
   * classified: a line the parser would ignore is dropped and the rest of it skipped unbuffered;
   * a used line past the limit fails the parser.
   */
  private hold(src: Buffer, start: number, end: number): void {
    const length = this.pendingLength + (end - start);
    if (this.pendingLength < HEAD_BYTES || length > this.maxLineBytes) {
      if (this.skippable(src, start, end, false)) {
        this.dropPending();
        this.skipping = true;
        return;
      }
      if (length > this.maxLineBytes) {
        this.fail(new SseLimitError('line', this.maxLineBytes));
        return;
      }
    }
    this.appendPending(src, start, end);
  }

  /**
   * Whether the line made of the held bytes plus `src[start, end)` can be dropped: it is ignored
   * by §9.2.6, unless it is a comment within `maxLineBytes` that `onComment` wants.
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
    return head[from] !== COLON || this.onComment === undefined || total > this.maxLineBytes;
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

  /**
   * §9.2.6 line rules on one line (terminator excluded): bytes `buf[start, end)`, and, when
   * `text` is given, the same line decoded as `text[cstart, cend)`; otherwise values are decoded
   * from the bytes (`ascii`: known to be ASCII).
   */
  private processLine(
    buf: Buffer,
    start: number,
    end: number,
    text: string | null,
    cstart: number,
    cend: number,
    ascii: boolean,
  ): void {
    if (start === end) {
      this.dispatch();
      return;
    }
    if (buf[start] === COLON) {
      // "If the line starts with a U+003A COLON character (:)": a comment.
      const onComment = this.onComment;
      if (onComment !== undefined) {
        let from = start + 1;
        if (from < end && buf[from] === SPACE) from++;
        onComment(from === end ? '' : text !== null ? text.slice(cstart + (from - start), cend) : decodeLine(buf, from, end, ascii));
      }
      return;
    }
    // Field names are ASCII, and 0x3A never occurs inside a UTF-8 sequence, so comparing
    // bytes equals comparing the decoded strings.
    let colon = start + 1;
    while (colon < end && buf[colon] !== COLON) colon++;
    let valueStart = colon + 1;
    if (colon === end) valueStart = end; // no colon: the whole line is the field name, value ""
    else if (valueStart < end && buf[valueStart] === SPACE) valueStart++;

    switch (colon - start) {
      case 4:
        if (buf[start] === 0x64 && buf[start + 1] === 0x61 && buf[start + 2] === 0x74 && buf[start + 3] === 0x61) {
          this.appendData(end - valueStart, valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii));
        }
        return;
      case 5:
        if (buf[start] === 0x65) {
          if (buf[start + 1] === 0x76 && buf[start + 2] === 0x65 && buf[start + 3] === 0x6e && buf[start + 4] === 0x74) {
            this.eventType = valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii);
          }
        } else if (
          buf[start] === 0x72 &&
          buf[start + 1] === 0x65 &&
          buf[start + 2] === 0x74 &&
          buf[start + 3] === 0x72 &&
          buf[start + 4] === 0x79
        ) {
          this.retry(buf, valueStart, end);
        }
        return;
      case 2:
        if (buf[start] === 0x69 && buf[start + 1] === 0x64) {
          // "If the field value does not contain U+0000 NULL, then set the last event ID buffer".
          for (let i = valueStart; i < end; i++) if (buf[i] === 0) return;
          this.lastEventId = valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii);
        }
        return;
      default:
        return; // unknown field: ignored
    }
  }

  private appendData(bytes: number, value: string): void {
    const total = this.dataLines === 0 ? bytes : this.dataBytes + 1 + bytes;
    if (total > this.maxEventBytes) {
      this.fail(new SseLimitError('event', this.maxEventBytes));
      return;
    }
    this.dataBytes = total;
    this.data = this.dataLines === 0 ? value : this.data + '\n' + value;
    this.dataLines++;
  }

  private retry(buf: Buffer, start: number, end: number): void {
    // "If the field value consists of only ASCII digits": an empty value is ignored too.
    if (start === end) return;
    for (let i = start; i < end; i++) {
      const c = buf[i] as number;
      if (c < 0x30 || c > 0x39) return;
    }
    this.onRetry?.(Number.parseInt(buf.toString('latin1', start, end), 10));
  }

  /** §9.2.6 "dispatch the event". */
  private dispatch(): void {
    // Step 1: the source's last event ID string is set, with or without an event.
    if (this.onLastEventId !== undefined && this.lastEventId !== this.reportedLastEventId) {
      this.reportedLastEventId = this.lastEventId;
      this.onLastEventId(this.lastEventId);
    }
    if (this.dataLines === 0) {
      // "If the data buffer is an empty string, set the data buffer and the event type buffer
      // to the empty string and return."
      this.eventType = '';
      return;
    }
    const event: SseEvent = {
      type: this.eventType === '' ? 'message' : this.eventType,
      data: this.data,
      lastEventId: this.lastEventId,
    };
    this.data = '';
    this.dataLines = 0;
    this.dataBytes = 0;
    this.eventType = '';
    this.onEvent(event);
  }

  private fail(error: SseLimitError): void {
    this.reset();
    this.failed = true;
    if (this.onError === undefined) throw error;
    this.onError(error);
  }
}

const BOM = [0xef, 0xbb, 0xbf] as const;
const BOM_BUFFER = Buffer.from(BOM);
