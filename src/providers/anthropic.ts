import type { ServerResponse } from 'node:http';
import { BufferOverflowError, ShutdownError, TimeoutError } from '../errors';
import type { SseEvent, SseEventInit } from '../sse';
import { UpstreamStreamError } from '../http/errors';
import { codeOf, httpStatusOf, messageOf, upstreamErrorOf, upstreamErrorText, writeJsonError } from './errors-http';
import type { GatewayEvent, ProviderAdapter } from './types';
import { eventTypeOf, hasAsciiEscape, num, obj, parseObject, reencoder } from './wire';

/** The Anthropic API version sent upstream when the client sent none. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const MESSAGE_NEEDLE = Buffer.from('message_');
const ERROR_NEEDLE = Buffer.from('rror');

/**
 * The Anthropic error object `{type, message}` (plus tidegate's `code` for its own errors); an
 * upstream HTTP error answered in Anthropic's error JSON keeps the upstream's.
 */
function anthropicError(raised: unknown): { type: string; message: string; code?: string } {
  const error = upstreamErrorOf(raised, anthropicAnswerError);
  if (error instanceof UpstreamStreamError) return { type: error.type, message: error.message };
  let type = 'api_error';
  if (error instanceof TimeoutError) type = 'timeout_error';
  else if (error instanceof BufferOverflowError || error instanceof ShutdownError || codeOf(error) === 'ERR_TIDEGATE_OVERFLOW') type = 'overloaded_error';
  else {
    const status = (error as { status?: unknown } | undefined)?.status;
    const byStatus = typeof status === 'number' ? ANTHROPIC_TYPE_BY_STATUS[status] : undefined;
    if (byStatus !== undefined) type = byStatus;
    else if (typeof status === 'number' && status >= 400 && status < 500) type = 'invalid_request_error';
  }
  return { type, message: messageOf(error), code: codeOf(error) };
}

/**
 * The upstream's error in an Anthropic `error` event's data, `{"type":"error","error":{"type",
 * "message"}}` (`data`, the event's text, stands in for a missing message).
 */
function anthropicUpstreamError(body: Record<string, unknown> | undefined, data: string): UpstreamStreamError {
  const err = obj(body?.error);
  return new UpstreamStreamError(typeof err?.message === 'string' ? err.message : data, typeof err?.type === 'string' ? err.type : 'api_error');
}

/** The upstream's error in an Anthropic error answer (an `error` object, `type` `"error"` or none), else `undefined`. */
function anthropicAnswerError(body: Record<string, unknown>, text: string): UpstreamStreamError | undefined {
  if (obj(body.error) === undefined || (body.type !== undefined && body.type !== 'error')) return undefined;
  return anthropicUpstreamError(body, text);
}

/** Anthropic's error `type` for an HTTP status (its API's errors page), for refusals and relayed statuses. */
const ANTHROPIC_TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

/**
 * Anthropic Messages (`POST /v1/messages`): `event: <type>` + `data: {"type": …}` frames from
 * `message_start` to `message_stop`; text in `content_block_delta` / `text_delta`; usage in
 * `message_start` (input) and `message_delta` (output); a mid-stream error is `event: error`
 * with `{"type":"error","error":{"type","message"}}` (e.g. `overloaded_error`), which
 * `@anthropic-ai/sdk` raises as `APIError`.
 */
export const anthropicAdapter: ProviderAdapter = {
  isKeepAlive: (event) => event.event === 'ping',
  name: 'anthropic',
  requiresTerminator: true,
  defaultForwardHeaders: ['content-type', 'anthropic-version', 'anthropic-beta'],
  decoder() {
    const wireOf = reencoder();
    return (e: SseEvent): GatewayEvent => {
      const wire = wireOf(e);
      const body = parseObject(e.data);
      const type = eventTypeOf(e, body);
      switch (type) {
        case 'message_stop':
          return { type: 'done', wire };
        case 'error':
          return { type: 'error', error: anthropicUpstreamError(body, e.data), wire };
        case 'content_block_delta': {
          const delta = obj(body?.delta);
          if (delta?.type === 'text_delta' && typeof delta.text === 'string') return { type: 'delta', text: delta.text, wire };
          return { type: 'frame', wire };
        }
        case 'message_start': {
          const usage = obj(obj(body?.message)?.usage);
          if (usage === undefined) return { type: 'frame', wire };
          return { type: 'usage', usage: { inputTokens: num(usage.input_tokens), outputTokens: num(usage.output_tokens) }, wire };
        }
        case 'message_delta': {
          const usage = obj(body?.usage);
          if (usage === undefined) return { type: 'frame', wire };
          return { type: 'usage', usage: { inputTokens: num(usage.input_tokens), outputTokens: num(usage.output_tokens) }, wire };
        }
        default:
          return { type: 'frame', wire };
      }
    };
  },
  needsDecode(frame) {
    // message_start / message_delta (usage), message_stop (the terminator), error events
    // (`event: error`, `"type":"error"`); `rror` is a rarer first byte to search for than `e`.
    return frame.indexOf(MESSAGE_NEEDLE) !== -1 || frame.indexOf(ERROR_NEEDLE) !== -1 || hasAsciiEscape(frame);
  },
  authHeaders(apiKey): Record<string, string> {
    return apiKey ? { 'x-api-key': apiKey } : {};
  },
  formatError(error): SseEventInit {
    // The upstream's own `{"type":"error",…}` answer, whole: its `request_id` included.
    const upstream = upstreamErrorText(error, (json) => json.type === 'error' && anthropicAnswerError(json, '') !== undefined);
    return { event: 'error', data: upstream ?? JSON.stringify({ type: 'error', error: anthropicError(error) }) };
  },
  sendHttpError(res: ServerResponse, error) {
    writeJsonError(res, httpStatusOf(error), { type: 'error', error: anthropicError(error) });
  },
  nonStreamBody(body) {
    return { ...body, stream: false };
  },
};
