import { frame, positiveInt, SimDialect, SimResponseContext } from './protocol';

function event(type: string, payload: Record<string, unknown>): string {
  return frame(JSON.stringify({ type, ...payload }), type);
}

const STOP_REASON = { stop: 'end_turn', length: 'max_tokens' } as const;

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/**
 * Anthropic Messages dialect (`POST /v1/messages`), in the shape of fixture
 * anthropic-messages-basic.sse: `message_start`, `content_block_start`, `ping`, one
 * `content_block_delta` (`text_delta`) per token, `content_block_stop`, `message_delta`
 * (`stop_reason`, `usage.output_tokens`), `message_stop`; each frame has `event:` and `data:`
 * lines. Mid-stream errors are `event: error` with an `overloaded_error` body, as in
 * anthropic-error-midstream.sse (spaces after the colons, as the docs and the SDK tests spell it).
 */
export const anthropicDialect: SimDialect = {
  preamble(ctx: SimResponseContext) {
    return [
      event('message_start', {
        message: {
          id: ctx.id,
          type: 'message',
          role: 'assistant',
          content: [],
          model: ctx.model,
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: ctx.promptTokens, output_tokens: 1 },
        },
      }),
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      // The live API sends the ping with a space after the colon.
      frame('{"type": "ping"}', 'ping'),
    ];
  },
  token(_ctx, text) {
    return event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
  },
  finish(_ctx, reason, completionTokens) {
    return [
      event('content_block_stop', { index: 0 }),
      event('message_delta', {
        delta: { stop_reason: STOP_REASON[reason], stop_sequence: null },
        usage: { output_tokens: completionTokens },
      }),
      event('message_stop', {}),
    ];
  },
  errorFrame() {
    return frame('{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}', 'error');
  },
  completion(ctx, text, reason, completionTokens) {
    return {
      id: ctx.id,
      type: 'message',
      role: 'assistant',
      model: ctx.model,
      content: [{ type: 'text', text }],
      stop_reason: STOP_REASON[reason],
      stop_sequence: null,
      usage: { input_tokens: ctx.promptTokens, output_tokens: completionTokens },
    };
  },
  errorBody(status, message) {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    return { type: 'error', error: { type, message } };
  },
  maxTokens(body) {
    return positiveInt(body.max_tokens);
  },
};
