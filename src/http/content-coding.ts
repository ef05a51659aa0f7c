/**
 * The content codings an upstream body may arrive in and still be read: gzip and deflate with
 * their `x-` aliases, lower case, which node-fetch 2 decodes with a 32 KiB window. node-fetch
 * decodes one only when the answer's `Content-Encoding` is exactly that spelling, alone; anything
 * else it hands on undecoded, as if identity. `br` is left out though node-fetch decodes it: a
 * brotli decoder keeps a window of up to 16 MiB, as large as the sender declares, outside every
 * stream's byte budget.
 */
export const DECODED_CODINGS: ReadonlySet<string> = new Set(['gzip', 'x-gzip', 'deflate', 'x-deflate']);

/**
 * What an answer's body is in, read from its `Content-Encoding`: no coding (`identity`), one
 * coding of {@link DECODED_CODINGS} (`decoded`, lower case), or anything else (`refused`: the
 * codings as listed, lower case, a stack of several included).
 */
export type BodyCoding = { kind: 'identity' } | { kind: 'decoded'; coding: string } | { kind: 'refused'; codings: readonly string[] };

const IDENTITY: BodyCoding = { kind: 'identity' };
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * Reads a `Content-Encoding` value (RFC 9110 §8.4), as Node joins repeated header lines (`, `):
 * codings are case-insensitive tokens in a list, empty elements skipped (§5.6.1), and
 * `identity`, which names no coding, skipped too. One coding of {@link DECODED_CODINGS} is
 * `decoded`; several, even each decodable, are `refused` (node-fetch undoes one).
 *
 * @param value the header as received, `undefined` when absent.
 * @example
 * bodyCoding(' GZIP ')         // { kind: 'decoded', coding: 'gzip' }
 * bodyCoding('identity')       // { kind: 'identity' }
 * bodyCoding('gzip, zstd')     // { kind: 'refused', codings: ['gzip', 'zstd'] }
 */
export function bodyCoding(value: string | undefined): BodyCoding {
  if (value === undefined) return IDENTITY;
  const codings = codingList(value, 'identity');
  if (codings.length === 0) return IDENTITY;
  if (codings.length === 1 && DECODED_CODINGS.has(codings[0] as string)) return { kind: 'decoded', coding: codings[0] as string };
  return { kind: 'refused', codings };
}

/**
 * The transfer codings of a `Transfer-Encoding` value besides `chunked` (RFC 9112 §6.1), lower
 * case, in order; `undefined` when there are none. Node's HTTP parser undoes `chunked` only, so
 * any other transfer coding is still on the body it hands over, and none is decoded here.
 */
export function transferCodings(value: string | undefined): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const codings = codingList(value, 'identity', 'chunked');
  return codings.length === 0 ? undefined : codings;
}

/**
 * The codings a header's list names (RFC 9110 §5.6.1), lower case, in order: empty elements and
 * those in `skip` left out. OWS is spaces and tabs only (§5.6.3): a coding padded with anything
 * else is no coding read here.
 */
function codingList(value: string, ...skip: readonly string[]): string[] {
  const codings: string[] = [];
  for (const element of value.split(',')) {
    const coding = element.replace(OWS, '').toLowerCase();
    if (coding !== '' && !skip.includes(coding)) codings.push(coding);
  }
  return codings;
}
