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
 * | any other the WHATWG Encoding Standard knows (Shift_JIS, EUC-JP, GB18030, Big5, EUC-KR, …) | `TextDecoder` | UTF-8, the charset parameter changed to `utf-8` (Node writes none of them) |
 * | a name nobody knows | `latin1` | byte for byte (an ASCII-compatible body is still scanned) |
 */

/** Single-byte charsets, whose bytes `latin1` carries through a string unchanged. */
const SINGLE_BYTE_CHARSET = /^(?:iso-?8859-\d+|latin-?\d|l\d|windows-125\d|cp125\d|us-ascii|ascii|koi8-[ru])$/;

type Codec = 'utf8' | 'latin1' | 'utf16le' | 'utf16be' | TextDecoder;

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

function codecOf(contentType: string | null | undefined): Codec {
  const charset = charsetOf(contentType);
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return 'utf8';
  if (SINGLE_BYTE_CHARSET.test(charset)) return 'latin1';
  if (charset === 'utf-16le' || charset === 'utf-16') return 'utf16le';
  if (charset === 'utf-16be') return 'utf16be';
  return decoderFor(charset) ?? 'latin1';
}

/**
 * Whether a body of `contentType` is UTF-8 text: it names no charset, or UTF-8. Its bytes can be
 * scanned for a secret's UTF-8 bytes without decoding it.
 *
 * @param contentType the header's value as received, `null` or `undefined` when absent
 */
export function isUtf8Body(contentType: string | null | undefined): boolean {
  return codecOf(contentType) === 'utf8';
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
  const codec = codecOf(contentType);
  if (codec === 'utf16be') return Buffer.from(bytes.subarray(0, bytes.length & ~1)).swap16().toString('utf16le');
  return typeof codec === 'string' ? bytes.toString(codec) : codec.decode(bytes);
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
  if (typeof codec === 'string') return { bytes: Buffer.from(text, codec), contentType };
  return { bytes: Buffer.from(text, 'utf8'), contentType: (contentType as string).replace(/(;\s*charset\s*=\s*)(?:"[^"]*"|[^;\s]+)/i, '$1utf-8') };
}
