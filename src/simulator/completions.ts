import { frame, positiveInt, SimDialect, SimResponseContext } from './protocol';
import { openaiDialect } from './openai';

function chunk(ctx: SimResponseContext, text: string, finishReason: string | null, usage?: unknown): string {
  const body: Record<string, unknown> = {
    id: ctx.id,
    object: 'text_completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ text, index: 0, logprobs: null, finish_reason: finishReason }],
  };
  if (usage !== undefined) body.usage = usage;
  return frame(JSON.stringify(body));
}

function usage(ctx: SimResponseContext, completionTokens: number): Record<string, unknown> {
  return { prompt_tokens: ctx.promptTokens, completion_tokens: completionTokens, total_tokens: ctx.promptTokens + completionTokens };
}

/**
 * OpenAI legacy completions dialect (`POST /v1/completions`): one `text_completion` chunk per
 * token with the text in `choices[0].text`, a last chunk with `finish_reason` and empty text,
 * a usage chunk (`choices: []`) when `stream_options.include_usage`, then `data: [DONE]`.
 * Errors (HTTP and mid-stream) are Chat Completions'.
 */
export const completionsDialect: SimDialect = {
  preamble() {
    return [];
  },
  token(ctx, text) {
    return chunk(ctx, text, null);
  },
  finish(ctx, reason, completionTokens) {
    const frames = [chunk(ctx, '', reason)];
    if (ctx.includeUsage) frames.push(frame(JSON.stringify({ id: ctx.id, object: 'text_completion', created: ctx.created, model: ctx.model, choices: [], usage: usage(ctx, completionTokens) })));
    frames.push(frame('[DONE]'));
    return frames;
  },
  errorFrame: openaiDialect.errorFrame,
  completion(ctx, text, reason, completionTokens) {
    return {
      id: ctx.id,
      object: 'text_completion',
      created: ctx.created,
      model: ctx.model,
      choices: [{ text, index: 0, logprobs: null, finish_reason: reason }],
      usage: usage(ctx, completionTokens),
    };
  },
  errorBody: openaiDialect.errorBody,
  maxTokens(body) {
    return positiveInt(body.max_tokens);
  },
};
