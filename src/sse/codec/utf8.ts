import * as nodeBuffer from 'buffer';
import { lenientDecoder } from './bytes';

/*
 * Decoding of complete SSE lines, exact and fast: the three decoders below give identical
 * strings; which one runs is a speed choice only.
 */

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
/** Whether the bytes are all ASCII (native scan; `false` where Node lacks `buffer.isAscii`). */
export const isAscii: (input: Uint8Array) => boolean = nodeBuffer.isAscii ?? (() => false);
const transcode = typeof nodeBuffer.transcode === 'function' && process.versions.icu !== undefined ? nodeBuffer.transcode : undefined;

/**
 * Decodes complete lines (the range never ends inside a character). Valid UTF-8 goes through
 * ICU's transcoder, several times faster than V8's decoder on CJK text; ICU rejects invalid
 * input, which then takes the WHATWG TextDecoder (U+FFFD replacement).
 */
export function decodeUtf8(buf: Buffer, start: number, end: number): string {
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
export function decodeLine(buf: Buffer, start: number, end: number, ascii: boolean): string {
  if (ascii) return latin1Slice.call(buf, start, end);
  if (end - start >= 256 && mostlyNonAscii(buf, start, end)) return decodeUtf8(buf, start, end);
  return utf8Slice.call(buf, start, end);
}

/**
 * A speed heuristic only (both decoders give identical strings): samples three 32-byte windows
 * and says whether at least a quarter of their bytes are non-ASCII.
 */
export function mostlyNonAscii(buf: Buffer, start: number, end: number): boolean {
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

