import type { TokenUsage } from './types';

const USAGE_KEY = Buffer.from('"usage"');
const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/**
 * The token counts of a whole (non-stream) JSON answer: its top-level `usage` object, as OpenAI
 * chat, completions and embeddings (`prompt_tokens`, `completion_tokens`, `total_tokens`),
 * Anthropic Messages and OpenAI Responses (`input_tokens`, `output_tokens`) write it, at the end
 * of the object. `undefined` when there is none, or it is not an object of counts.
 *
 * Only the `usage` object is parsed, never the answer: an embeddings answer may be megabytes of
 * numbers. It is the last `"usage"` key outside a string's escapes (the providers write it after
 * the output, so text that quotes the word cannot come after it), read to its matching brace.
 */
export function wholeAnswerUsage(body: Buffer): TokenUsage | undefined {
  let at = body.lastIndexOf(USAGE_KEY);
  while (at > 0 && body[at - 1] === BACKSLASH) at = body.lastIndexOf(USAGE_KEY, at - 1);
  if (at < 0) return undefined;
  let i = at + USAGE_KEY.length;
  while (i < body.length && body[i] !== OPEN) {
    // Only whitespace and the colon may stand between the key and its object.
    if (body[i] !== 0x3a && body[i] !== 0x20 && body[i] !== 0x0a && body[i] !== 0x0d && body[i] !== 0x09) return undefined;
    i++;
  }
  const end = matchingBrace(body, i);
  if (end < 0) return undefined;
  let usage: unknown;
  try {
    usage = JSON.parse(body.toString('utf8', i, end + 1));
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
