import { frame, positiveInt, SimDialect, SimFinishReason, SimResponseContext } from './protocol';

const FINGERPRINT = 'fp_tidegate_sim';

function chunk(ctx: SimResponseContext, choices: unknown[], usage?: unknown): string {
  const body: Record<string, unknown> = {
    id: ctx.id,
    object: 'chat.completion.chunk',
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: FINGERPRINT,
    choices,
  };
  if (usage !== undefined) body.usage = usage;
  return frame(JSON.stringify(body));
}

function usage(ctx: SimResponseContext, completionTokens: number): Record<string, unknown> {
  return {
    prompt_tokens: ctx.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: ctx.promptTokens + completionTokens,
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

const ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  413: { type: 'invalid_request_error', code: null },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

/**
 * OpenAI Chat Completions dialect (`POST /v1/chat/completions`), in the shape of the
 * openai-python live captures (fixtures openai-chat-basic.sse / openai-chat-error-midstream.sse):
 * role-only first chunk, one `delta.content` chunk per token, a `finish_reason` chunk on an
 * empty delta, a usage chunk with `choices: []` when `stream_options.include_usage`, then
 * `data: [DONE]`. Mid-stream errors are a `data:` line with a top-level `error` object and no
 * `[DONE]` (what openai-node's `Stream` raises `APIError` on).
 */
export const openaiDialect: SimDialect = {
  preamble(ctx) {
    return [
      chunk(ctx, [
        { index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null },
      ]),
    ];
  },
  token(ctx, text) {
    return chunk(ctx, [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]);
  },
  finish(ctx, reason: SimFinishReason, completionTokens) {
    const frames = [chunk(ctx, [{ index: 0, delta: {}, logprobs: null, finish_reason: reason }])];
    if (ctx.includeUsage) frames.push(chunk(ctx, [], usage(ctx, completionTokens)));
    frames.push(frame('[DONE]'));
    return frames;
  },
  errorFrame() {
    return frame(
      JSON.stringify({
        error: {
          message: 'The server had an error while processing your request. Sorry about that!',
          type: 'server_error',
          param: null,
          code: null,
        },
      }),
    );
  },
  completion(ctx, text, reason, completionTokens) {
    return {
      id: ctx.id,
      object: 'chat.completion',
      created: ctx.created,
      model: ctx.model,
      system_fingerprint: FINGERPRINT,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: reason,
        },
      ],
      usage: usage(ctx, completionTokens),
    };
  },
  errorBody(status, message) {
    const t = ERROR_TYPES[status] ?? { type: 'server_error', code: null };
    return { error: { message, type: t.type, param: null, code: t.code } };
  },
  maxTokens(body) {
    return positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens);
  },
};
