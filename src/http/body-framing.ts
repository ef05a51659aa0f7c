/**
 * The framing of an HTTP/1.1 response body (RFC 9112 §6–7), I/O-free: which bytes of the raw
 * connection are body. Used where the upstream client reads a body itself, a whole socket read
 * at a time, instead of receiving it one HTTP chunk at a time from Node's parser (see
 * `bypassBodyCallbacks` in node-hooks.ts). The parser still runs over the same bytes and stays the
 * judge of framing errors; this decoder only has to agree with it on valid input, and is at least
 * as lenient (a chunk-size line may carry anything after its digits, a bare LF ends a line).
 */
export class BodyFraming {
  /** The body ended (the last chunk and its trailers, or `Content-Length` bytes). */
  done = false;
  /** Why the bytes are not a body this decoder understands; set once, then it decodes nothing. */
  failure: string | undefined;
  private state: State;
  /** Body bytes left in the current chunk (or of `Content-Length`). */
  private remaining: number;
  private sizeDigits = 0;

  /**
   * @param contentLength the body's `Content-Length` in bytes, or `undefined` for a
   *   `Transfer-Encoding: chunked` body.
   */
  constructor(contentLength: number | undefined) {
    this.state = contentLength === undefined ? State.SizeStart : State.Length;
    this.remaining = contentLength ?? 0;
    if (contentLength === 0) this.done = true;
  }

  /**
   * Copies the body bytes of `bytes[from, end)` to `out` from `outAt` and returns how many. Stops
   * at the end of the body (later bytes are not looked at). `out` needs room for `end - from`
   * bytes; `bytes` is left as it is.
   */
  decode(bytes: Buffer, from: number, end: number, out: Buffer, outAt: number): number {
    let o = outAt;
    let i = from;
    while (i < end && !this.done && this.failure === undefined) {
      switch (this.state) {
        case State.Length:
        case State.Data: {
          const take = Math.min(this.remaining, end - i);
          copy(bytes, i, take, out, o);
          o += take;
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            if (this.state === State.Length) this.done = true;
            else this.state = State.DataCr;
          }
          break;
        }
        case State.SizeStart:
        case State.Size: {
          const c = bytes[i++] as number;
          const digit = hexValue(c);
          if (digit >= 0) {
            // Leading zeros are no digits of the size (RFC 9112's `1*HEXDIG` allows them, and so
            // does Node's parser); 13 significant ones are 2^52, exact in a double.
            if ((digit > 0 || this.remaining > 0) && ++this.sizeDigits > 13) return this.fail('chunk size too large', o - outAt);
            this.remaining = this.remaining * 16 + digit;
            this.state = State.Size;
          } else if (this.state === State.SizeStart) return this.fail('chunk size expected', o - outAt);
          else if (c === LF) this.endSizeLine();
          else this.state = State.SizeLine; // CR, extensions, whitespace: up to the LF
          break;
        }
        case State.SizeLine: {
          const lf = bytes.indexOf(LF, i);
          if (lf === -1 || lf >= end) i = end;
          else {
            i = lf + 1;
            this.endSizeLine();
          }
          break;
        }
        case State.DataCr: {
          const c = bytes[i++];
          if (c === CR) this.state = State.DataLf;
          else if (c === LF) this.state = State.SizeStart;
          else return this.fail('CRLF expected after chunk data', o - outAt);
          break;
        }
        case State.DataLf: {
          if (bytes[i++] !== LF) return this.fail('LF expected after chunk data', o - outAt);
          this.state = State.SizeStart;
          break;
        }
        case State.TrailerStart: {
          const c = bytes[i++];
          if (c === LF) this.done = true;
          else if (c === CR) this.state = State.TrailerEnd;
          else this.state = State.TrailerLine;
          break;
        }
        case State.TrailerEnd: {
          if (bytes[i++] !== LF) return this.fail('LF expected after trailers', o - outAt);
          this.done = true;
          break;
        }
        case State.TrailerLine: {
          const lf = bytes.indexOf(LF, i);
          if (lf === -1 || lf >= end) i = end;
          else {
            i = lf + 1;
            this.state = State.TrailerStart;
          }
          break;
        }
      }
    }
    return o - outAt;
  }

  private endSizeLine(): void {
    this.sizeDigits = 0;
    this.state = this.remaining === 0 ? State.TrailerStart : State.Data;
  }

  /** Records why decoding stopped; returns `decoded` (the body bytes compacted before it). */
  private fail(reason: string, decoded: number): number {
    this.failure = reason;
    return decoded;
  }
}

const enum State {
  Length,
  SizeStart,
  Size,
  SizeLine,
  Data,
  DataCr,
  DataLf,
  TrailerStart,
  TrailerLine,
  TrailerEnd,
}

const LF = 0x0a;
const CR = 0x0d;

/** Copies `n` bytes: a loop for the short spans of one token (no view object), a native copy for longer ones. */
function copy(from: Buffer, at: number, n: number, to: Buffer, toAt: number): void {
  if (n < 128) for (let k = 0; k < n; k++) to[toAt + k] = from[at + k] as number;
  else to.set(from.subarray(at, at + n), toAt);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
}

/** What {@link framingOf} and {@link bodyStart} read of a parsed response head. */
export interface ParsedHead {
  statusCode?: number | undefined;
  headers: Record<string, string | string[] | undefined>;
  rawHeaders: string[];
}

/** The body's framing from its parsed headers: chunked, or a `Content-Length`; `undefined` for anything else. */
export function framingOf(head: ParsedHead): BodyFraming | undefined {
  const te = head.headers['transfer-encoding'];
  if (te !== undefined) return typeof te === 'string' && te.trim().toLowerCase() === 'chunked' ? new BodyFraming(undefined) : undefined;
  const cl = head.headers['content-length'];
  return typeof cl === 'string' && /^\d{1,15}$/.test(cl) ? new BodyFraming(Number(cl)) : undefined;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const BARE_LF = /(^|[^\r])\n/;

/**
 * Where the body starts in `bytes`, a read that starts with the response's head (after any 1xx
 * heads); -1 unless the head found there is the one the parser read into `parsed`: same status,
 * same number of header lines, CRLF line ends only.
 */
export function bodyStart(bytes: Buffer, parsed: ParsedHead): number {
  let pos = 0;
  for (;;) {
    if (bytes.toString('latin1', pos, pos + 7) !== 'HTTP/1.') return -1;
    const end = bytes.indexOf(HEAD_END, pos);
    if (end === -1) return -1;
    const head = bytes.toString('latin1', pos, end);
    if (BARE_LF.test(head)) return -1;
    const status = Number(head.slice(9, 12));
    if (status >= 100 && status < 200) {
      pos = end + 4;
      continue;
    }
    const headerLines = head.split('\r\n').length - 1;
    return status === parsed.statusCode && headerLines * 2 === parsed.rawHeaders.length ? end + 4 : -1;
  }
}
