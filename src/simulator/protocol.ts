/** Why the simulated model stopped: the whole transcript, or the request's max tokens. */
export type SimFinishReason = 'stop' | 'length';

/** What a provider dialect needs to know to render one response. */
export interface SimResponseContext {
  /** Response id (`chatcmpl-…` / `msg_…`). */
  readonly id: string;
  /** The `model` the request asked for, echoed back as providers do. */
  readonly model: string;
  /** Unix seconds. */
  readonly created: number;
  /** Rough prompt size in tokens (request JSON characters / 4). */
  readonly promptTokens: number;
  /** OpenAI `stream_options.include_usage`; ignored by Anthropic (always sends usage). */
  readonly includeUsage: boolean;
  /** What a dialect numbering its events needs of the reply so far (Responses: `sequence_number`, the text). */
  readonly progress: { sequence: number; text: string };
}

/**
 * One provider's wire dialect: SSE frames (complete `event:`/`data:` blocks ending in a blank
 * line) and JSON bodies. Pure functions, no I/O.
 */
export interface SimDialect {
  /** Frames sent before the first token (OpenAI role chunk; Anthropic message_start … ping). */
  preamble(ctx: SimResponseContext): string[];
  /** The frame carrying one token. */
  token(ctx: SimResponseContext, text: string): string;
  /** Frames after the last token, terminator included. */
  finish(ctx: SimResponseContext, reason: SimFinishReason, completionTokens: number): string[];
  /** The provider's mid-stream error frame (after a 200). */
  errorFrame(ctx: SimResponseContext): string;
  /** A non-stream response body. */
  completion(ctx: SimResponseContext, text: string, reason: SimFinishReason, completionTokens: number): unknown;
  /** An HTTP error body in the provider's shape for `status`. */
  errorBody(status: number, message: string): unknown;
  /** The request's max token cap, if it set one. */
  maxTokens(body: Record<string, unknown>): number | undefined;
}

/** Formats one SSE frame: optional `event:` line, one `data:` line, blank line. */
export function frame(data: string, event?: string): string {
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}

/** Reads a positive integer field, else undefined. */
export function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}
