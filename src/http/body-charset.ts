/**
 * Reading an upstream body's bytes as text in the charset its `Content-Type` names, and writing
 * that text back: what an error body goes through when it is scanned for secrets and relayed.
 *
 * | Charset | Read with | Written back |
 * |---|---|---|
 * | none, UTF-8 | `utf8` | UTF-8, the same bytes |
 * | single-byte (ISO-8859-*, Windows-125*, KOI8, ASCII) | `latin1` | byte for byte |
 * | UTF-16LE, `utf-16` | `utf16le` | byte for byte |
 * | UTF-16BE | `utf16le` of the bytes swapped | byte for byte |
 * | UTF-32LE, UTF-32BE | code point by code point | UTF-8, the charset parameter changed to `utf-8` |
 * | any other the WHATWG Encoding Standard knows (Shift_JIS, EUC-JP, GB18030, Big5, EUC-KR, …) | `TextDecoder` | UTF-8, the charset parameter changed to `utf-8` (Node writes none of them) |
 * | a name nobody knows | `latin1` | byte for byte (an ASCII-compatible body is still scanned) |
 *
 * A body whose `Content-Type` names no charset is UTF-8 unless its first bytes say otherwise, as
 * a JSON reader that detects the encoding (RFC 4627 §3, Python's `json.loads`) would read it: a
 * UTF-16 or UTF-32 byte order mark, or the NUL pattern of two ASCII characters in UTF-16 or
 * UTF-32. Such a body is read in that encoding and written back as UTF-8, which a body without
 * a charset is.
 */

/** Single-byte charsets, whose bytes `latin1` carries through a string unchanged. */
const SINGLE_BYTE_CHARSET = /^(?:iso-?8859-\d+|latin-?\d|l\d|windows-125\d|cp125\d|us-ascii|ascii|koi8-[ru])$/;

type Codec = 'utf8' | 'latin1' | 'utf16le' | 'utf16be' | 'utf32le' | 'utf32be' | TextDecoder;

/** Decoders made for the charsets upstreams named, by name; at most {@link MAX_DECODERS}. */
const decoders = new Map<string, TextDecoder | undefined>();
const MAX_DECODERS = 32;

/** The `charset` parameter of `contentType`, lower case, without quotes. */
function charsetOf(contentType: string | null | undefined): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
}

function decoderFor(charset: string): TextDecoder | undefined {
  if (decoders.has(charset)) return decoders.get(charset);
  let decoder: TextDecoder | undefined;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    decoder = undefined; // a label the Encoding Standard does not know (RangeError)
  }
  if (decoders.size < MAX_DECODERS) decoders.set(charset, decoder);
  return decoder;
}

/** The encoding the first bytes of a body without a charset show (see the module's docstring), `utf8` when they show none. */
function sniffed(bytes: Uint8Array | undefined): Codec {
  if (bytes === undefined || bytes.length < 2) return 'utf8';
  const [a, b, c, d] = bytes as unknown as [number, number, number | undefined, number | undefined];
  if (a === 0xff && b === 0xfe) return c === 0 && d === 0 ? 'utf32le' : 'utf16le';
  if (a === 0xfe && b === 0xff) return 'utf16be';
  if (a === 0 && b === 0 && c === 0xfe && d === 0xff) return 'utf32be';
  if (bytes.length >= 4) {
    if (a === 0 && b === 0 && c === 0 && d !== 0) return 'utf32be';
    if (a !== 0 && b === 0 && c === 0 && d === 0) return 'utf32le';
  }
  if (a === 0 && b !== 0) return 'utf16be';
  if (a !== 0 && b === 0) return 'utf16le';
  return 'utf8';
}

function codecOf(contentType: string | null | undefined, bytes?: Uint8Array): Codec {
  const charset = charsetOf(contentType);
  if (charset === undefined) return sniffed(bytes);
  if (charset === 'utf-8' || charset === 'utf8') return 'utf8';
  if (SINGLE_BYTE_CHARSET.test(charset)) return 'latin1';
  if (charset === 'utf-16le' || charset === 'utf-16') return 'utf16le';
  if (charset === 'utf-16be') return 'utf16be';
  if (charset === 'utf-32le' || charset === 'utf-32') return 'utf32le';
  if (charset === 'utf-32be') return 'utf32be';
  return decoderFor(charset) ?? 'latin1';
}

/**
 * Whether a body of `contentType` is UTF-8 text: it names UTF-8, or no charset and its first
 * `bytes` show no other encoding. Its bytes can be scanned for a secret's UTF-8 bytes without
 * decoding it.
 *
 * @param contentType the header's value as received, `null` or `undefined` when absent
 * @param bytes the body (its first 4 bytes are read), when it names no charset
 */
export function isUtf8Body(contentType: string | null | undefined, bytes?: Uint8Array): boolean {
  return codecOf(contentType, bytes) === 'utf8';
}

/**
 * `bytes` as text in the charset `contentType` names (see the module's table): for a charset
 * Node writes, writing the text back with {@link encodeBody} gives the same bytes.
 *
 * @param bytes the body, or its first bytes (a character cut at the end reads as U+FFFD)
 * @param contentType the header's value as received, `null` or `undefined` when absent
 * @example
 * decodeBody(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/html; charset=ISO-8859-1'); // 'café'
 */
export function decodeBody(bytes: Buffer, contentType: string | null | undefined): string {
  const codec = codecOf(contentType, bytes);
  if (codec === 'utf16be') return Buffer.from(bytes.subarray(0, bytes.length & ~1)).swap16().toString('utf16le');
  if (codec === 'utf32le' || codec === 'utf32be') return utf32(bytes, codec === 'utf32le');
  return typeof codec === 'string' ? bytes.toString(codec) : codec.decode(bytes);
}

/** UTF-32 text (no decoder in Node or the Encoding Standard): a unit that is no scalar value, or a cut one at the end, reads as U+FFFD. */
function utf32(bytes: Buffer, littleEndian: boolean): string {
  const parts: string[] = [];
  const points: number[] = [];
  for (let at = 0; at < bytes.length; at += 4) {
    const point = at + 4 > bytes.length ? 0xfffd : littleEndian ? bytes.readUInt32LE(at) : bytes.readUInt32BE(at);
    points.push(point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff) ? 0xfffd : point);
    if (points.length === 4096) parts.push(String.fromCodePoint(...points.splice(0)));
  }
  parts.push(String.fromCodePoint(...points));
  return parts.join('');
}

/**
 * The bytes of `text` (read with {@link decodeBody}) to send with the `Content-Type`
 * `contentType`, and that header's value: unchanged for a charset Node writes, with
 * `charset=utf-8` for one it cannot (the text is then UTF-8).
 *
 * @param text the body as text, e.g. with secrets redacted
 * @param contentType the header's value as received, `undefined` when absent
 * @example
 * encodeBody('エラー', 'text/plain; charset=Shift_JIS'); // { bytes: <UTF-8>, contentType: 'text/plain; charset=utf-8' }
 */
export function encodeBody(text: string, contentType: string | undefined): { bytes: Buffer; contentType: string | undefined } {
  const codec = codecOf(contentType);
  if (codec === 'utf16be') return { bytes: Buffer.from(text, 'utf16le').swap16(), contentType };
  if (typeof codec === 'string' && codec !== 'utf32le' && codec !== 'utf32be') return { bytes: Buffer.from(text, codec), contentType };
  return { bytes: Buffer.from(text, 'utf8'), contentType: (contentType as string).replace(/(;\s*charset\s*=\s*)(?:"[^"]*"|[^;\s]+)/i, '$1utf-8') };
}
