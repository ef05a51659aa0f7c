import type { TokenUsage } from './types';

const USAGE_KEY = Buffer.from('"usage"');
const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const COLON = 0x3a;

/**
 * The token counts of a whole (non-stream) JSON answer: its top-level `usage` object, as OpenAI
 * chat, completions and embeddings (`prompt_tokens`, `completion_tokens`, `total_tokens`),
 * Anthropic Messages and OpenAI Responses (`input_tokens`, `output_tokens`) write it, at the end
 * of the object. `undefined` when there is none, or it is not an object of counts.
 *
 * Only the `usage` object is parsed, never the answer: an embeddings answer may be megabytes of
 * numbers. It is the last `"usage"` followed by `:` and an object, outside a string's escapes (the
 * providers write it after the output, so text that quotes the word cannot come after it), read
 * to its matching brace.
 */
export function wholeAnswerUsage(body: Buffer): TokenUsage | undefined {
  let start = -1;
  for (let at = body.lastIndexOf(USAGE_KEY); at >= 0 && start < 0; at = at > 0 ? body.lastIndexOf(USAGE_KEY, at - 1) : -1) {
    // `\"usage\"` is the word inside a string; `"usage"` not followed by `:` and `{` is a value.
    if (at === 0 || body[at - 1] !== BACKSLASH) start = objectAfterKey(body, at + USAGE_KEY.length);
  }
  if (start < 0) return undefined;
  const end = matchingBrace(body, start);
  if (end < 0) return undefined;
  let usage: unknown;
  try {
    usage = JSON.parse(body.toString('utf8', start, end + 1));
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

/** The index of the `{` after a key that ends before `from` (whitespace, `:`, whitespace), else -1. */
function objectAfterKey(body: Buffer, from: number): number {
  let i = skipSpace(body, from);
  if (body[i] !== COLON) return -1;
  i = skipSpace(body, i + 1);
  return body[i] === OPEN ? i : -1;
}

function skipSpace(body: Buffer, i: number): number {
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09)) i++;
  return i;
}

/** The index of the `}` closing the object that opens at `start`, strings skipped; -1 when it does not close. */
function matchingBrace(body: Buffer, start: number): number {
  if (body[start] !== OPEN) return -1;
  let depth = 0;
  for (let i = start; i < body.length; i++) {
    const b = body[i];
    if (b === QUOTE) {
      for (i++; i < body.length && body[i] !== QUOTE; i++) if (body[i] === BACKSLASH) i++;
    } else if (b === OPEN) depth++;
    else if (b === CLOSE && --depth === 0) return i;
  }
  return -1;
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}
