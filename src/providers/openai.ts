import type { ServerResponse } from 'node:http';
import type { SseEvent, SseEventInit } from '../sse';
import { UpstreamStreamError } from '../http/errors';
import { codeOf, httpStatusOf, messageOf, upstreamErrorOf, writeJsonError } from './errors-http';
import type { GatewayEvent, ProviderAdapter, TokenUsage } from './types';
import { hasAsciiEscape, num, obj, parseObject, reencoder } from './wire';

/**
 * The OpenAI error object `{message, type, code, param}` for an error tidegate (or the upstream)
 * raised; an upstream HTTP error answered in OpenAI's error JSON keeps the upstream's.
 */
function openAiError(error: unknown): { message: string; type: string; code: string | number | null; param: string | null } {
  const e = upstreamErrorOf(error, openAiUpstreamError);
  if (e instanceof UpstreamStreamError) return { message: e.message, type: e.type, code: e.providerCode, param: e.param };
  return { message: messageOf(e), type: 'tidegate_error', code: codeOf(e), param: null };
}

/**
 * The upstream's error in an OpenAI error frame or error answer, `{"error":{"message","type",
 * "code","param"}}`, or `undefined` when `body` has no `error` object.
 */
function openAiUpstreamError(body: Record<string, unknown>): UpstreamStreamError | undefined {
  const error = obj(body.error);
  if (error === undefined) return undefined;
  const { code, param } = error;
  return new UpstreamStreamError(
    typeof error.message === 'string' ? error.message : jsonText(error),
    typeof error.type === 'string' ? error.type : 'server_error',
    typeof code === 'string' || typeof code === 'number' ? code : null,
    typeof param === 'string' ? param : null,
  );
}

/** `value` as JSON text; an upstream's object nested past what `JSON.stringify` can walk (it recurses) is named so instead. */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return 'upstream error (its error object is nested too deep to show)';
  }
}

function usageOf(v: unknown): TokenUsage | undefined {
  const u = obj(v);
  if (u === undefined) return undefined;
  return { inputTokens: num(u.prompt_tokens), outputTokens: num(u.completion_tokens), totalTokens: num(u.total_tokens) };
}

// Needles for the byte relay's scan. Native search is fast when the first bytes are rare in the
// text: JSON is full of `"`, so `rror"` (an `"error"` key or value; inside content it would be
// `rror\"`) costs a tenth of `"error"`, and `DONE]` (a superset of `[DONE]`: a false hit only
// costs a decode) a quarter of `[DONE]` (every chunk holds `[{`).
const DONE_NEEDLE = Buffer.from('DONE]');
const ERROR_NEEDLE = Buffer.from('rror"');
const USAGE_NEEDLE = Buffer.from('usage');

/**
 * A `"usage"` key with an object value (`"usage":null`, sent in every chunk with `include_usage`,
 * is not). The JSON may span several `data:` lines of one event (WHATWG HTML §9.2.6 joins them
 * with LF, which JSON reads as whitespace), so the whitespace skipped around the colon includes a
 * line break and the next `data:` line's prefix.
 */
function hasUsageObject(frame: Buffer): boolean {
  for (let at = frame.indexOf(USAGE_NEEDLE); at !== -1; at = frame.indexOf(USAGE_NEEDLE, at + 5)) {
    let i = at + 5;
    if (frame[i] !== 0x22 /* " */) continue;
    i = skipDataSpace(frame, i + 1);
    if (frame[i] !== 0x3a /* : */) continue;
    i = skipDataSpace(frame, i + 1);
    if (frame[i] === 0x7b /* { */) return true;
  }
  return false;
}

const DATA_PREFIX = Buffer.from('data:');

/**
 * From `i`, past JSON whitespace in an event's data: spaces, tabs, CRs, and a line break followed
 * by the event's next `data:` line (its prefix and the one space the SSE parser strips; other
 * fields in between, `id:`, `event:`, comments, are passed over). Stops at a blank line (the
 * event's end) or at the first other byte; returns that byte's index.
 */
function skipDataSpace(frame: Buffer, i: number): number {
  for (;;) {
    const c = frame[i];
    if (c === 0x20 || c === 0x09 || c === 0x0d) {
      i++;
      continue;
    }
    if (c !== 0x0a /* \n */) return i;
    let line = i + 1;
    for (;;) {
      if (line >= frame.length || frame[line] === 0x0a) return i; // the event ended: no more data
      if (line + 5 <= frame.length && frame.compare(DATA_PREFIX, 0, 5, line, line + 5) === 0) {
        i = frame[line + 5] === 0x20 ? line + 6 : line + 5;
        break;
      }
      const next = frame.indexOf(0x0a, line);
      if (next === -1) return i;
      line = next + 1;
    }
  }
}

/**
 * True when an event's `data` ends an OpenAI stream. openai-node (6.x, `core/streaming.js`)
 * ends its `Stream` on `sse.data.startsWith('[DONE]')`, after its SSE decoder stripped one
 * leading space of the field (WHATWG HTML §9.2.6): `data: [DONE]`, `data:[DONE]` and their CRLF
 * forms give `[DONE]` and end it; `data:  [DONE]` (two spaces, sent by some compatible servers)
 * gives ` [DONE]`, which the SDK does not match and then fails to `JSON.parse`. The gateway
 * matches as the SDK does, and also after any run of spaces, and forwards the terminator as
 * `data: [DONE]` ({@link OPENAI_TERMINATOR}), so such a stream ends cleanly for every client.
 */
export function isOpenAiDone(data: string): boolean {
  if (data === '[DONE]') return true;
  let i = 0;
  while (data.charCodeAt(i) === 0x20) i++;
  return data.startsWith('[DONE]', i);
}

/** The terminator block the gateway sends an OpenAI client, whatever form the upstream's had. */
export const OPENAI_TERMINATOR = Buffer.from('data: [DONE]\n\n');

const CHOICE_PREFIX = '"choices":[{"index":0,"delta":{"content":"';

/** The parts around the content of the last chunk that took the fast path (constant within a stream). */
interface FastState {
  /** Everything up to the content's opening quote. */
  head: string;
  suffix: string;
}

/**
 * `choices[0].delta.content` of an ordinary content chunk without `JSON.parse` (a third of the
 * OpenAI route's CPU in the S2 benchmark): only for the common layout
 * `{…,"choices":[{"index":0,"delta":{"content":"…"}…}…}` at the top level, with no `error` key
 * and no `usage` other than `null`. `undefined` means "not that layout": parse it fully.
 * What precedes and follows the content (id, model, finish_reason …) repeats in every chunk of
 * a stream, so it is checked once and then only compared. Assumes the frame is valid JSON (a
 * malformed frame with that layout counts as a delta; its bytes are relayed unchanged either way).
 */
function fastContent(data: string, state: FastState): string | undefined {
  let start: number;
  // indexOf(…) === 0, not startsWith: V8's startsWith is ~7x slower on the two-byte strings CJK text makes.
  if (state.head.length > 0 && data.indexOf(state.head) === 0) {
    start = state.head.length;
  } else {
    if (data.charCodeAt(0) !== 0x7b /* { */) return undefined;
    const at = data.indexOf(CHOICE_PREFIX);
    if (at < 0) return undefined;
    const prefix = data.slice(0, at);
    if (!cleanKeys(prefix) || !atTopLevel(prefix)) return undefined;
    start = at + CHOICE_PREFIX.length;
    state.head = detached(data.slice(0, start));
  }
  // The closing quote of the content: the first `"` not escaped by an odd run of backslashes.
  let end = data.indexOf('"', start);
  while (end > 0 && data.charCodeAt(end - 1) === 0x5c) {
    let k = end - 1;
    while (data.charCodeAt(k - 1) === 0x5c) k--;
    if ((end - k) % 2 === 0) break;
    end = data.indexOf('"', end + 1);
  }
  // The delta must hold content only (`"role"`, tool calls … take the full parse).
  if (end < 0 || data.charCodeAt(end + 1) !== 0x7d /* } */) return undefined;
  const suffixAt = end + 2;
  if (!(state.suffix.length > 0 && data.length - suffixAt === state.suffix.length && data.endsWith(state.suffix))) {
    const suffix = data.slice(suffixAt);
    if (suffix.charCodeAt(suffix.length - 1) !== 0x7d || !cleanKeys(suffix)) return undefined;
    state.suffix = detached(suffix);
  }
  if (data.indexOf('\\', start) < 0 || data.indexOf('\\', start) > end) return data.slice(start, end);
  try {
    return JSON.parse(data.slice(start - 1, end + 1)) as string;
  } catch {
    return undefined;
  }
}

/**
 * A copy of `part` that does not keep the chunk it was cut from: a V8 slice references its
 * parent string, which a held stream would otherwise keep until a chunk of another layout
 * (`utf16le` round-trips any string). Runs when the layout changes, not per chunk.
 */
function detached(part: string): string {
  return Buffer.from(part, 'utf16le').toString('utf16le');
}

/** No `"error"` key and no `"usage"` other than `null` in this part of the chunk. */
function cleanKeys(part: string): boolean {
  if (part.indexOf('"error"') >= 0) return false;
  const usage = part.indexOf('"usage"');
  return usage < 0 || (part.startsWith(':null', usage + 7) && part.indexOf('"usage"', usage + 7) < 0);
}

/** True when the end of `prefix` is a key position of the top-level object (depth 1, outside strings). */
function atTopLevel(prefix: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < prefix.length; i++) {
    const c = prefix.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return depth === 1 && !inString;
}

/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`), legacy completions
 * (`POST /v1/completions`, text in `choices[0].text`) and compatible servers (vLLM, Ollama,
 * llama.cpp server): `data: {chat.completion.chunk}` frames, `data: [DONE]` at the end, a
 * mid-stream error as `data: {"error":{"message","type","code"}}` (what openai-node's `Stream`
 * raises `APIError` on). Usage arrives in a `choices: []` chunk when the client set
 * `stream_options.include_usage`.
 */
export const openaiAdapter: ProviderAdapter = {
  name: 'openai',
  requiresTerminator: true,
  defaultForwardHeaders: ['content-type', 'openai-organization', 'openai-project', 'openai-beta', 'x-request-id'],
  decoder() {
    const wireOf = reencoder();
    const fast: FastState = { head: '', suffix: '' };
    return (e: SseEvent): GatewayEvent => {
      const wire = wireOf(e);
      if (isOpenAiDone(e.data)) return { type: 'done', wire: e.data === '[DONE]' ? wire : { data: '[DONE]' } };
      const text = fastContent(e.data, fast);
      if (text !== undefined) return text.length > 0 ? { type: 'delta', text, wire } : { type: 'frame', wire };
      const body = parseObject(e.data);
      if (body === undefined) return { type: 'frame', wire };
      const error = openAiUpstreamError(body);
      if (error !== undefined) return { type: 'error', error, wire };
      const usage = usageOf(body.usage);
      const choices = Array.isArray(body.choices) ? body.choices : [];
      const first = obj(choices[0]);
      // Chat chunks carry `delta.content`; legacy completions chunks carry `text`.
      const content = first?.delta !== undefined ? obj(first.delta)?.content : first?.text;
      if (typeof content === 'string' && content.length > 0) return usage ? { type: 'delta', text: content, usage, wire } : { type: 'delta', text: content, wire };
      if (usage !== undefined) return { type: 'usage', usage, wire };
      return { type: 'frame', wire };
    };
  },
  terminatorFrame: (e) => (e.data === '[DONE]' ? undefined : OPENAI_TERMINATOR),
  needsDecode(frame) {
    return frame.indexOf(DONE_NEEDLE) !== -1 || frame.indexOf(ERROR_NEEDLE) !== -1 || hasUsageObject(frame) || hasAsciiEscape(frame);
  },
  authHeaders(apiKey): Record<string, string> {
    return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  },
  formatError(error): SseEventInit {
    return { data: JSON.stringify({ error: openAiError(error) }) };
  },
  sendHttpError(res: ServerResponse, error) {
    writeJsonError(res, httpStatusOf(error), { error: openAiError(error) });
  },
  nonStreamBody(body) {
    const { stream_options: _omit, ...rest } = body;
    return { ...rest, stream: false };
  },
};
