/**
 * Whether the `Content-Type` value `contentType` names the media type `essence` (`type/subtype`,
 * given in lower case). Media types are compared case-insensitively and their parameters ignored,
 * whitespace before the `;` included (RFC 9110 §8.3.1, §5.6.6): `TEXT/Event-Stream ; charset=utf-8`
 * is `text/event-stream`. No value, or an empty one, names none.
 *
 * @param contentType the header's value as received (`Headers#get`), `null` or `undefined` when absent
 * @param essence the media type to match, lower case, without parameters
 * @example
 * isMediaType('Text/Event-Stream; charset=utf-8', 'text/event-stream'); // true
 * isMediaType('application/json, text/event-stream', 'text/event-stream'); // false: two values
 */
export function isMediaType(contentType: string | null | undefined, essence: string): boolean {
  if (contentType === undefined || contentType === null) return false;
  const semi = contentType.indexOf(';');
  const type = (semi === -1 ? contentType : contentType.slice(0, semi)).replace(OWS_AROUND, '');
  return type.length === essence.length && type.toLowerCase() === essence;
}

/** Optional whitespace (SP, HTAB) at either end, RFC 9110 §5.6.3. */
const OWS_AROUND = /^[ \t]+|[ \t]+$/g;

/** Single-byte charsets, whose bytes `latin1` carries through a string unchanged. */
const SINGLE_BYTE_CHARSET = /^(?:iso-?8859-\d+|latin-?\d|l\d|windows-125\d|cp125\d|us-ascii|ascii|koi8-[ru])$/;

/**
 * The Node encoding that reads an upstream body of `contentType` as text and writes it back byte
 * for byte: `latin1` for a single-byte charset (ISO-8859-*, Windows-125*, KOI8), `utf16le` for
 * UTF-16LE (and `utf-16`, read as little-endian), `utf8` otherwise (no charset, UTF-8, or one Node
 * cannot carry). Scanning an error body for secrets works on this text, so a body in a
 * single-byte charset is relayed unchanged and a UTF-16LE one is scanned, not skipped.
 *
 * @param contentType the header's value as received, `null` or `undefined` when absent
 * @example
 * bodyEncoding('text/html; charset=ISO-8859-1'); // 'latin1'
 * bodyEncoding('application/json'); // 'utf8'
 */
export function bodyEncoding(contentType: string | null | undefined): 'utf8' | 'latin1' | 'utf16le' {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset === undefined) return 'utf8';
  if (SINGLE_BYTE_CHARSET.test(charset)) return 'latin1';
  return charset === 'utf-16le' || charset === 'utf-16' ? 'utf16le' : 'utf8';
}
