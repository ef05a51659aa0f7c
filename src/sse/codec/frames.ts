import * as nodeBuffer from 'buffer';
import { SseLimitError } from '../../errors';
import { bomPrefix, CR, LF, lenientDecoder as lenient } from './bytes';
import { DEFAULT_MAX_EVENT_BYTES } from './event';

/**
 * Whole SSE event blocks, as the upstream sent them: bytes that start at an event boundary and
 * end with the blank line of the last block (`\n\n`), so they can be written to a client as they
 * are, between any other events. LF line ends only and valid UTF-8 (see {@link createFrameSplitter}).
 */
export class SseFrame {
  private counted = -1;

  constructor(
    /** The blocks' bytes: starts at a boundary, ends with `\n\n`. */
    readonly bytes: Buffer,
  ) {}

  /**
   * How many blank-line dispatch points the bytes hold (events, counting comment-only blocks).
   * Counted on first read (a native scan per event), so a relay that does not ask does not pay.
   */
  get events(): number {
    if (this.counted < 0) this.counted = countBlanks(this.bytes);
    return this.counted;
  }
}

/** Options for {@link createFrameSplitter}. */
export interface FrameSplitterOptions {
  /** Called once per frame, synchronously inside `feed()`. */
  onFrame: (frame: SseFrame) => void;
  /**
   * Largest event block accepted, in bytes, all its lines and line ends included. Default
   * {@link DEFAULT_MAX_EVENT_BYTES} (1 MiB). A larger block signals {@link SseLimitError}
   * (`limit: 'event'`) as soon as its pending bytes exceed the limit.
   */
  maxEventBytes?: number | undefined;
  /**
   * Target frame size, bytes (default 16 KiB): a frame holds as many whole blocks as fit; a
   * single block larger than this is a frame of its own.
   */
  maxFrameBytes?: number | undefined;
  /** Receives a limit error instead of `feed()` throwing it; the splitter then ignores input until `reset()`. */
  onError?: ((error: SseLimitError) => void) | undefined;
}

/** A streaming byte → {@link SseFrame} splitter: bytes in, frames out, no I/O. */
export interface FrameSplitter {
  /** Splits the next chunk; a chunk may end anywhere. @throws {SseLimitError} without `onError`. */
  feed(chunk: Uint8Array): void;
  /** End of stream: an unterminated last block is dropped (§9.2.6); the splitter is reset. */
  end(): void;
  /** Drops all state, including a failed state. */
  reset(): void;
  /** Bytes held for the incomplete block carried to the next chunk (and a possible BOM's start). */
  bufferedBytes(): number;
}

/** Default {@link FrameSplitterOptions.maxFrameBytes}: 16 KiB. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024;

const BLANK = Buffer.from('\n\n');
const isUtf8: (input: Uint8Array) => boolean = nodeBuffer.isUtf8 ?? ((input) => !Buffer.from(input).toString('utf8').includes('\ufffd'));

/**
 * Creates the splitter of the byte relay: it cuts a `text/event-stream` byte stream at event
 * boundaries (WHATWG HTML §9.2.6: a blank line dispatches) into {@link SseFrame}s that carry the
 * upstream's own bytes, so a gateway forwards each event without decoding it to a string and
 * encoding it back. What a client's §9.2.6 parser makes of the output equals what it makes of the
 * input; the bytes differ only where the input was irregular:
 *
 * - CRLF and lone CR line ends become LF (also a CRLF split across chunks);
 * - one leading BOM is removed (a client strips it only at stream start, and the relay may send
 *   a heartbeat first);
 * - invalid UTF-8 is replaced by U+FFFD per maximal subpart, exactly as the client's "UTF-8
 *   decode" would, so the output is always valid UTF-8;
 * - an unterminated last block is dropped at `end()`, as a client would discard it.
 *
 * Comments, `id`, `retry` and unknown fields are kept byte for byte.
 *
 * Cost: native scans only (`lastIndexOf`/`indexOf` for boundaries, `buffer.isUtf8` once per
 * chunk); a per-byte pass runs only for chunks holding CR, and a copy only for the incomplete
 * block carried to the next chunk and the bytes that complete it (a frame of its own).
 *
 * Limits: the incomplete block carried between chunks is bounded by `maxEventBytes`; a block over
 * it signals {@link SseLimitError} (`ERR_TIDEGATE_SSE_LIMIT`, `limit: 'event'`), thrown from
 * `feed()` or passed to `onError`. Note the limit counts the whole block (field names, line
 * ends), where {@link createSseParser} counts data values: set it with that margin.
 *
 * @example
 * const splitter = createFrameSplitter({ onFrame: (f) => res.write(f.bytes) });
 * splitter.feed(Buffer.from('data: a\n\ndata: b\n\ndata: c')); // one frame: 'data: a\n\ndata: b\n\n'
 */
export function createFrameSplitter(options: FrameSplitterOptions): FrameSplitter {
  if (options === null || typeof options !== 'object' || typeof options.onFrame !== 'function') {
    throw new TypeError('createFrameSplitter: options.onFrame must be a function');
  }
  return new FrameSplitterImpl(options);
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value === Infinity || (Number.isInteger(value) && value > 0))) {
    throw new RangeError(`createFrameSplitter: ${name} must be a positive integer or Infinity, got ${String(value)}`);
  }
  return value;
}

class FrameSplitterImpl implements FrameSplitter {
  private readonly onFrame: (frame: SseFrame) => void;
  private readonly onError: ((error: SseLimitError) => void) | undefined;
  private readonly maxEventBytes: number;
  /** Frames are cut within this window: never larger than a block may be. */
  private readonly window: number;
  /** The incomplete block carried from earlier chunks (owned, normalised): `pending[0, pendingLength)`. */
  private pending: Buffer | null = null;
  private pendingLength = 0;
  /** Bytes held at stream start while they may still be a BOM (0..2 bytes). */
  private head: Buffer | null = null;
  private bomDone = false;
  /** The previous chunk ended with CR: an LF first in the next chunk belongs to it. */
  private skipLF = false;
  private failed = false;

  constructor(options: FrameSplitterOptions) {
    this.onFrame = options.onFrame;
    this.onError = options.onError;
    this.maxEventBytes = positive('maxEventBytes', options.maxEventBytes, DEFAULT_MAX_EVENT_BYTES);
    this.window = Math.min(positive('maxFrameBytes', options.maxFrameBytes, DEFAULT_MAX_FRAME_BYTES), this.maxEventBytes);
  }

  feed(chunk: Uint8Array): void {
    if (this.failed) return;
    if (!(chunk instanceof Uint8Array)) throw new TypeError('FrameSplitter.feed: chunk must be a Uint8Array');
    if (chunk.byteLength === 0) return; // also between the CR and LF of a CRLF
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (!this.bomDone) {
      const stripped = this.stripBom(buf);
      if (stripped === undefined) return;
      buf = stripped;
    }
    if (this.skipLF || buf.indexOf(CR) !== -1) buf = this.normalise(buf);
    if (buf.length === 0) return;
    // 1. The block carried from earlier chunks, completed with the new bytes up to its blank
    //    line: only those are copied (one event's worth), never the rest of the chunk.
    let head: Buffer | null = null;
    const carried = this.pendingLength;
    if (carried > 0) {
      let end: number;
      if (buf[0] === LF && (this.pending as Buffer)[carried - 1] === LF) end = 1; // the blank line straddles
      else {
        const at = buf.indexOf(BLANK);
        if (at === -1) {
          if (carried + buf.length > this.maxEventBytes) return this.fail();
          this.append(buf);
          return;
        }
        end = at + 2;
      }
      while (end < buf.length && buf[end] === LF) end++; // extra blank lines stay with their block
      this.append(buf.subarray(0, end));
      head = (this.pending as Buffer).subarray(0, this.pendingLength);
      this.pending = null; // the head frame owns that buffer now
      this.pendingLength = 0;
      buf = buf.subarray(end);
    }
    // 2. Complete blocks of the chunk itself, up to its last blank line: views, not copies.
    const last = buf.lastIndexOf(BLANK);
    const completeEnd = last === -1 ? 0 : last + 2;
    // 3. The incomplete rest, copied (the chunk is not kept alive for it) before any callback runs.
    if (buf.length - completeEnd > this.maxEventBytes) return this.fail();
    if (completeEnd < buf.length) this.append(buf.subarray(completeEnd));
    if (head !== null) this.emitFrames(valid(head));
    if (completeEnd > 0 && !this.failed) this.emitFrames(valid(buf.subarray(0, completeEnd)));
  }

  end(): void {
    if (this.failed) return;
    this.reset(); // §9.2.6: pending data at the end of the stream is discarded
  }

  bufferedBytes(): number {
    return this.pendingLength + (this.head?.length ?? 0);
  }

  reset(): void {
    this.pending = null;
    this.pendingLength = 0;
    this.head = null;
    this.bomDone = false;
    this.skipLF = false;
    this.failed = false;
  }

  /** Cuts complete blocks into frames of at most `window` bytes (a larger single block alone). */
  private emitFrames(complete: Buffer): void {
    const n = complete.length;
    const window = this.window;
    let pos = 0;
    while (pos < n && !this.failed) {
      let end: number;
      if (n - pos <= window) end = n;
      else {
        const cut = complete.lastIndexOf(BLANK, pos + window - 2);
        if (cut >= pos) {
          end = cut + 2;
          while (end < n && complete[end] === LF) end++; // extra blank lines stay with their block
        } else {
          // One block larger than the window: it must still be within the event limit.
          end = complete.indexOf(BLANK, pos) + 2;
          if (end - pos > this.maxEventBytes) return this.fail();
        }
      }
      const bytes = complete.subarray(pos, end);
      pos = end;
      this.onFrame(new SseFrame(bytes));
    }
  }

  /** Appends to the carried block, growing its buffer by doubling (linear in a long block's size). */
  private append(bytes: Buffer): void {
    const length = this.pendingLength + bytes.length;
    let pending = this.pending;
    if (pending === null || pending.length < length) {
      const grown = Buffer.allocUnsafe(Math.max(256, length, pending === null ? 0 : Math.min(pending.length * 2, this.maxEventBytes)));
      if (pending !== null) pending.copy(grown, 0, 0, this.pendingLength);
      this.pending = pending = grown;
    }
    bytes.copy(pending, this.pendingLength);
    this.pendingLength = length;
  }


  /**
   * Strips one leading BOM, also when split across chunks; `undefined` while undecided. A BOM
   * followed by a second one is kept: a client strips exactly one at stream start, and the line
   * starting with the second is an unknown field either way, also behind a heartbeat.
   */
  private stripBom(buf: Buffer): Buffer | undefined {
    const head = this.head === null ? buf : Buffer.concat([this.head, buf]);
    const first = bomPrefix(head, 0);
    const second = first === 3 ? bomPrefix(head, 3) : 0;
    if ((first < 3 && first === head.length) || (first === 3 && second < 3 && second === head.length - 3)) {
      this.head = Buffer.from(head); // all BOM bytes so far: wait for more
      return undefined;
    }
    this.head = null;
    this.bomDone = true;
    return first === 3 && second < 3 ? head.subarray(3) : head;
  }

  /** CRLF and lone CR → LF, into a new buffer (a CR ending the chunk swallows a leading LF of the next). */
  private normalise(buf: Buffer): Buffer {
    const out = Buffer.allocUnsafe(buf.length);
    let o = 0;
    let i = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (buf[0] === LF) i = 1;
    }
    for (; i < buf.length; i++) {
      const c = buf[i] as number;
      if (c !== CR) out[o++] = c;
      else {
        out[o++] = LF;
        if (i + 1 === buf.length) this.skipLF = true;
        else if (buf[i + 1] === LF) i++;
      }
    }
    return out.subarray(0, o);
  }

  private fail(): void {
    const error = new SseLimitError('event', this.maxEventBytes);
    this.reset();
    this.failed = true;
    if (this.onError === undefined) throw error;
    this.onError(error);
  }
}


/** The bytes as they are when valid UTF-8, else decoded and re-encoded with U+FFFD replacements. */
function valid(bytes: Buffer): Buffer {
  return isUtf8(bytes) ? bytes : Buffer.from(lenient.decode(bytes), 'utf8');
}

/** Dispatch points (`\n\n`) in bytes that hold only complete blocks. */
function countBlanks(bytes: Buffer): number {
  let count = 0;
  let at = bytes.indexOf(BLANK);
  while (at !== -1) {
    count++;
    at = bytes.indexOf(BLANK, at + 2);
  }
  return count;
}
