import type { ServerResponse } from 'node:http';
import type { SseEvent, SseEventInit } from '../../sse';
import { UpstreamStreamError } from '../errors';
import { codeOf, httpStatusOf, messageOf, writeJsonError } from './errors-http';
import type { GatewayEvent, ProviderAdapter, TokenUsage } from './types';
import { num, obj, parseObject, reencoder } from './wire';

/** The OpenAI error object `{message, type, code}` for an error tidegate (or the upstream) raised. */
function openAiError(error: unknown): { message: string; type: string; code: string | number | null; param: null } {
  if (error instanceof UpstreamStreamError) return { message: error.message, type: error.type, code: error.providerCode, param: null };
  return { message: messageOf(error), type: 'tidegate_error', code: codeOf(error), param: null };
}

function usageOf(v: unknown): TokenUsage | undefined {
  const u = obj(v);
  if (u === undefined) return undefined;
  return { inputTokens: num(u.prompt_tokens), outputTokens: num(u.completion_tokens), totalTokens: num(u.total_tokens) };
}

/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`) and compatible servers (vLLM, Ollama,
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
    return (e: SseEvent): GatewayEvent => {
      const wire = wireOf(e);
      if (e.data === '[DONE]') return { type: 'done', wire };
      const body = parseObject(e.data);
      if (body === undefined) return { type: 'frame', wire };
      const error = obj(body.error);
      if (error !== undefined) {
        const code = error.code;
        return {
          type: 'error',
          error: new UpstreamStreamError(
            typeof error.message === 'string' ? error.message : JSON.stringify(error),
            typeof error.type === 'string' ? error.type : 'server_error',
            typeof code === 'string' || typeof code === 'number' ? code : null,
          ),
          wire,
        };
      }
      const usage = usageOf(body.usage);
      const choices = Array.isArray(body.choices) ? body.choices : [];
      const content = obj(obj(choices[0])?.delta)?.content;
      if (typeof content === 'string' && content.length > 0) return usage ? { type: 'delta', text: content, usage, wire } : { type: 'delta', text: content, wire };
      if (usage !== undefined) return { type: 'usage', usage, wire };
      return { type: 'frame', wire };
    };
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
