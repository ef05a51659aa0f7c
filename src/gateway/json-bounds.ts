/**
 * Nesting a JSON request body may have: 512 levels of objects and arrays. `JSON.parse` reads
 * any depth, but a body the gateway writes out again (a route that rewrites it) goes through
 * `JSON.stringify`, which recurses once per level and throws on the stack's end; no provider
 * API nests this deep.
 */
export const MAX_JSON_DEPTH = 512;

/** Bounds of {@link scanJsonBounds}. */
export interface JsonBounds {
  /** Deepest nesting of objects and arrays accepted, levels (`[]` is 1). */
  maxDepth: number;
  /**
   * Most values counted: objects, arrays and strings, object keys included; numbers, `true`,
   * `false` and `null` are not counted (0 = no cap).
   */
  maxValues?: number | undefined;
}

/** What {@link scanJsonBounds} counts besides its bounds, when asked. */
export interface JsonCounts {
  /** Keys of the top-level object, duplicates counted each time; -1 when the text is no object. */
  topLevelKeys: number;
}

/** The first bound a JSON text passes, and the byte offset where it does. */
export interface JsonBoundExceeded {
  readonly bound: 'depth' | 'values';
  /** The bound that was passed. */
  readonly limit: number;
  /** Offset of the byte that passed it. */
  readonly offset: number;
}

/** JSON's structural bytes (RFC 8259 §2), as the byte scanners of JSON texts compare them. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COLON = 0x3a;

/**
 * Checks a JSON text's nesting and size in values before it is parsed, in one linear pass over
 * its bytes that skips strings (a bracket inside a string is text; an escaped quote does not
 * end one) and stops at the first level past `maxDepth` or the first value past `maxValues`.
 *
 * What `JSON.parse` costs grows with the values it builds, not with the bytes: a 4 MiB string
 * parses in a few milliseconds, 4 MiB of `[{"a":0},{"b":0},…]` (a hidden class per object) in
 * half a second into ~70 MB of heap. The values counted are those that allocate: objects,
 * arrays and strings (keys included, a distinct key costs most); a number or literal in an
 * array takes 8 bytes and is bounded by the text's length.
 *
 * It validates nothing else: a text that is not JSON passes or fails here as its brackets
 * say, and `JSON.parse` rejects it after. For a valid JSON text it sees the strings exactly as
 * `JSON.parse` does (in UTF-8 no byte of a multi-byte character is a quote or a backslash).
 *
 * @param bytes a JSON text as UTF-8.
 * @param counts filled with the top-level object's keys ({@link topLevelKeyCount}), where given.
 * @returns `undefined` within the bounds, else the first bound passed.
 *
 * @example
 * scanJsonBounds(Buffer.from('[[["]]]]]"]]]'), { maxDepth: 3 }); // undefined: 3 levels
 * scanJsonBounds(Buffer.from('[[[[1]]]]'), { maxDepth: 3 }); // { bound: 'depth', limit: 3, offset: 3 }
 * scanJsonBounds(Buffer.from('{"a":[1,2,3],"b":"c"}'), { maxDepth: 3, maxValues: 4 }); // { bound: 'values', limit: 4, offset: 17 }
 */
export function scanJsonBounds(bytes: Uint8Array, bounds: JsonBounds, counts?: JsonCounts): JsonBoundExceeded | undefined {
  const { maxDepth } = bounds;
  const maxValues = bounds.maxValues !== undefined && bounds.maxValues > 0 ? bounds.maxValues : Infinity;
  const length = bytes.length;
  let depth = 0;
  let values = 0;
  // Keys of the top-level object are counted where asked and the text starts with one.
  let start = 0;
  while (start < length && isJsonSpace(bytes[start])) start++;
  const keysOf = counts !== undefined && bytes[start] === OPEN_BRACE ? counts : undefined;
  if (counts !== undefined) counts.topLevelKeys = keysOf === undefined ? -1 : 0;
  for (let i = 0; i < length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      if (++values > maxValues) return { bound: 'values', limit: maxValues, offset: i };
      i = stringEnd(bytes, i + 1);
      if (keysOf !== undefined && depth === 1) {
        let j = i + 1;
        while (j < length && isJsonSpace(bytes[j])) j++;
        if (bytes[j] === COLON) keysOf.topLevelKeys++;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return { bound: 'depth', limit: maxDepth, offset: i };
      if (++values > maxValues) return { bound: 'values', limit: maxValues, offset: i };
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return undefined;
}

/**
 * How many keys a JSON text's top-level object names, duplicates counted each time (`-1` when
 * the text is not an object). `JSON.parse` keeps the last of duplicate keys, other parsers the
 * first or refuse them: where this differs from the parsed object's key count, the text means
 * different things to the gateway and to an upstream.
 *
 * {@link scanJsonBounds}'s pass with no bounds: strings skipped, a string at depth 1 followed by
 * `:` is a key. Expects a text that `JSON.parse` accepted.
 */
export function topLevelKeyCount(bytes: Uint8Array): number {
  const counts: JsonCounts = { topLevelKeys: -1 };
  scanJsonBounds(bytes, { maxDepth: Infinity }, counts);
  return counts.topLevelKeys;
}

/** Whether a byte is JSON whitespace (RFC 8259 §2: space, tab, line feed, carriage return). */
export function isJsonSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Strings up to this long are walked byte by byte; a longer one is searched with `indexOf`. */
const SHORT_STRING_BYTES = 64;

/** Offset of the quote that ends the string whose text starts at `from` (the length when none does). */
function stringEnd(bytes: Uint8Array, from: number): number {
  const length = bytes.length;
  const stop = Math.min(length, from + SHORT_STRING_BYTES);
  let at = from;
  for (; at < stop; at++) {
    const c = bytes[at];
    if (c === BACKSLASH) at++;
    else if (c === QUOTE) return at;
  }
  if (at >= length) return length;
  // A long string: indexOf runs natively, one call per quote instead of one loop turn per byte.
  for (;;) {
    at = bytes.indexOf(QUOTE, at);
    if (at === -1) return length;
    // Escaped when an odd number of backslashes precede it (`\"`, not `\\"`); the opening
    // quote ends the run.
    let slashes = 0;
    while (bytes[at - slashes - 1] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
    at++;
  }
}
