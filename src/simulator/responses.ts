import { frame, positiveInt, SimDialect, SimFinishReason, SimResponseContext } from './protocol';
import { openaiDialect } from './openai';

/** The next event of the reply, numbered (`sequence_number` counts from 0 in each reply). */
function event(ctx: SimResponseContext, type: string, payload: Record<string, unknown>): string {
  return frame(JSON.stringify({ type, sequence_number: ctx.progress.sequence++, ...payload }), type);
}

function message(ctx: SimResponseContext, status: string, text: string | undefined): Record<string, unknown> {
  return {
    id: `msg_${ctx.id}`,
    type: 'message',
    status,
    content: text === undefined ? [] : [{ type: 'output_text', annotations: [], logprobs: [], text }],
    role: 'assistant',
  };
}

/** The `response` object in the shape of openai-responses-basic.sse (fields the SDK reads, and the status). */
function response(ctx: SimResponseContext, status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.created,
    status,
    error: null,
    incomplete_details: null,
    model: ctx.model,
    output: [],
    parallel_tool_calls: true,
    text: { format: { type: 'text' } },
    usage: null,
    ...extra,
  };
}

function usage(ctx: SimResponseContext, outputTokens: number): Record<string, unknown> {
  return {
    input_tokens: ctx.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: ctx.promptTokens + outputTokens,
  };
}

function finalResponse(ctx: SimResponseContext, text: string, reason: SimFinishReason, outputTokens: number): Record<string, unknown> {
  const complete = reason === 'stop';
  return response(ctx, complete ? 'completed' : 'incomplete', {
    incomplete_details: complete ? null : { reason: 'max_output_tokens' },
    output: [message(ctx, complete ? 'completed' : 'incomplete', text)],
    usage: usage(ctx, outputTokens),
  });
}

// The wording of the recorded mid-stream error (openai-responses-error-midstream.sse).
const QUOTA_MESSAGE =
  'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.';

/**
 * OpenAI Responses dialect (`POST /v1/responses`), in the shape of the recorded
 * openai-responses-basic.sse: `event: <type>` + `data: {"type", "sequence_number", …}` from
 * `response.created`, `response.in_progress`, `response.output_item.added` and
 * `response.content_part.added`, one `response.output_text.delta` per token, then
 * `response.output_text.done`, `response.content_part.done`, `response.output_item.done` and
 * `response.completed` (`response.incomplete` when `max_output_tokens` cut it) with usage; no
 * `[DONE]`. A mid-stream error is the recorded pair: an `error` event (`insufficient_quota`),
 * then `response.failed` with `error: {code, message}`.
 */
export const responsesDialect: SimDialect = {
  preamble(ctx) {
    return [
      event(ctx, 'response.created', { response: response(ctx, 'in_progress') }),
      event(ctx, 'response.in_progress', { response: response(ctx, 'in_progress') }),
      event(ctx, 'response.output_item.added', { output_index: 0, item: message(ctx, 'in_progress', undefined) }),
      event(ctx, 'response.content_part.added', { item_id: `msg_${ctx.id}`, output_index: 0, content_index: 0, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } }),
    ];
  },
  token(ctx, text) {
    ctx.progress.text += text;
    return event(ctx, 'response.output_text.delta', { item_id: `msg_${ctx.id}`, output_index: 0, content_index: 0, delta: text, logprobs: [] });
  },
  finish(ctx, reason, outputTokens) {
    const { text } = ctx.progress;
    const part = { type: 'output_text', annotations: [], logprobs: [], text };
    return [
      event(ctx, 'response.output_text.done', { item_id: `msg_${ctx.id}`, output_index: 0, content_index: 0, text, logprobs: [] }),
      event(ctx, 'response.content_part.done', { item_id: `msg_${ctx.id}`, output_index: 0, content_index: 0, part }),
      event(ctx, 'response.output_item.done', { output_index: 0, item: message(ctx, reason === 'stop' ? 'completed' : 'incomplete', text) }),
      event(ctx, reason === 'stop' ? 'response.completed' : 'response.incomplete', { response: finalResponse(ctx, text, reason, outputTokens) }),
    ];
  },
  errorFrame(ctx) {
    return (
      event(ctx, 'error', { error: { type: 'insufficient_quota', code: 'insufficient_quota', message: QUOTA_MESSAGE, param: null } }) +
      event(ctx, 'response.failed', { response: response(ctx, 'failed', { error: { code: 'insufficient_quota', message: QUOTA_MESSAGE } }) })
    );
  },
  completion(ctx, text, reason, outputTokens) {
    return finalResponse(ctx, text, reason, outputTokens);
  },
  errorBody: openaiDialect.errorBody,
  maxTokens(body) {
    return positiveInt(body.max_output_tokens);
  },
};
