import type { TokenUsage } from '../../providers/types';
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, isJsonSpace, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../json-bounds';

const USAGE_KEY = Buffer.from('"usage"');
/** The largest `usage` object parsed, bytes: a provider's is under 1 KiB; a larger one is no count. */
const MAX_USAGE_BYTES = 16 * 1024;

/**
 * The token counts of a whole (non-stream) JSON answer: its top-level `usage` object, as OpenAI
 * chat, completions and embeddings (`prompt_tokens`, `completion_tokens`, `total_tokens`),
 * Anthropic Messages and OpenAI Responses (`input_tokens`, `output_tokens`) write it, at the end
 * of the object. `undefined` when there is none at the top level, it is not an object of counts,
 * or it is larger than 16 KiB.
 *
 * Only the `usage` object is parsed, never the answer: an embeddings answer may be megabytes of
 * numbers. The answer is walked back from its end, strings skipped and depth counted, to the
 * object whose key is `"usage"` one level in; the providers write it last, so the walk is short,
 * and it is linear in the body's size when there is none. The rest of the answer is not
 * validated: a body that is not JSON may still yield counts, and a key written with escapes
 * (`"\u0075sage"`) is not found.
 */
export function wholeAnswerUsage(body: Buffer): TokenUsage | undefined {
  const span = topLevelUsage(body);
  if (span === undefined || span.end - span.start >= MAX_USAGE_BYTES) return undefined;
  let usage: unknown;
  try {
    usage = JSON.parse(body.toString('utf8', span.start, span.end + 1));
  } catch {
    return undefined;
  }
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const out: TokenUsage = {};
  const input = count(u.input_tokens) ?? count(u.prompt_tokens);
  const output = count(u.output_tokens) ?? count(u.completion_tokens);
  const total = count(u.total_tokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (total !== undefined) out.totalTokens = total;
  return input === undefined && output === undefined && total === undefined ? undefined : out;
}

/**
 * The `{` and `}` of the object the top-level object holds under the key `"usage"` (the last one,
 * as `JSON.parse` keeps), walking back from the end; `undefined` when there is none, or the body
 * is not an object.
 */
function topLevelUsage(body: Buffer): { start: number; end: number } | undefined {
  let i = skipSpaceBack(body, body.length - 1);
  if (body[i] !== CLOSE_BRACE) return undefined;
  /** Open objects and arrays around `i`, the top-level object being 1. */
  let depth = 0;
  /** The `}` of the last object seen closing back to depth 1: a top-level value. */
  let valueEnd = -1;
  for (; i >= 0; i--) {
    const b = body[i];
    if (b === QUOTE) {
      // The closing quote of a string: back to its opening one, escaped quotes skipped.
      const close = i;
      for (i--; i >= 0 && !(body[i] === QUOTE && !escaped(body, i)); i--);
      // The last top-level `"usage"` key, its value not an object (that would have been met first).
      if (depth === 1 && close - i + 1 === USAGE_KEY.length && body.compare(USAGE_KEY, 0, USAGE_KEY.length, i, close + 1) === 0 && body[skipSpace(body, close + 1)] === COLON) return undefined;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth++;
      if (depth === 2 && b === CLOSE_BRACE) valueEnd = i;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (depth === 2 && b === OPEN_BRACE && isUsageKeyBefore(body, i)) return { start: i, end: valueEnd };
      if (--depth === 0) return undefined;
    }
  }
  return undefined;
}

/** Whether the bytes before the `{` at `at` are `"usage"`, whitespace, `:`, whitespace. */
function isUsageKeyBefore(body: Buffer, at: number): boolean {
  let k = skipSpaceBack(body, at - 1);
  if (body[k] !== COLON) return false;
  k = skipSpaceBack(body, k - 1) - USAGE_KEY.length + 1;
  // `"xx\"usage"` ends the same way: the key's opening quote must not be escaped.
  return k >= 0 && body.compare(USAGE_KEY, 0, USAGE_KEY.length, k, k + USAGE_KEY.length) === 0 && !escaped(body, k);
}

/** Whether the byte at `at` follows an odd run of backslashes. */
function escaped(body: Buffer, at: number): boolean {
  let n = 0;
  while (at - n - 1 >= 0 && body[at - n - 1] === BACKSLASH) n++;
  return n % 2 === 1;
}

function skipSpace(body: Buffer, i: number): number {
  while (i < body.length && isJsonSpace(body[i])) i++;
  return i;
}

function skipSpaceBack(body: Buffer, i: number): number {
  while (i >= 0 && isJsonSpace(body[i])) i--;
  return i;
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}
