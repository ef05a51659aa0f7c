/**
 * The byte-level scanner shared by the SSE codec (`parser.ts`, `frames.ts`): the bytes WHATWG
 * HTML §9.2.6 gives meaning to, the BOM check at stream start, and the search for a line end.
 * CR and LF never occur inside a UTF-8 sequence, so lines are found on bytes before any decode.
 */

/** U+000A LINE FEED. */
export const LF = 0x0a;
/** U+000D CARRIAGE RETURN. */
export const CR = 0x0d;
/** U+003A COLON: starts a comment, ends a field name. */
export const COLON = 0x3a;
/** U+0020 SPACE: one is stripped after a field's colon. */
export const SPACE = 0x20;
/** The UTF-8 byte order mark, stripped once at stream start ("UTF-8 decode"). */
export const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** How many bytes of a BOM start at `at` (0–3; less than 3 also when `bytes` ends first). */
export function bomPrefix(bytes: Uint8Array, at: number): number {
  let m = 0;
  while (m < 3 && at + m < bytes.length && bytes[at + m] === BOM[m]) m++;
  return m;
}

/** Where the first line end (CR or LF) at or after `pos` is, -1 when none: §9.2.6 ends lines at CRLF, LF or CR. */
export function lineEnd(buf: Buffer, pos: number): number {
  const lf = buf.indexOf(LF, pos);
  const cr = buf.indexOf(CR, pos);
  return cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
}

/** WHATWG "UTF-8 decode without BOM" (a mid-stream U+FEFF is content): U+FFFD per maximal subpart. */
export const lenientDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
