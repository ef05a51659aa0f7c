import type { ServerResponse } from 'node:http';
import { SseFrame, encodeSse, type SseEvent, type SseEventInit } from '../sse';
import { UpstreamStreamError } from '../http/errors';
import { codeOf, httpStatusOf, messageOf, upstreamErrorOf, writeJsonError } from './errors-http';
import type { GatewayEvent, ProviderAdapter, TokenUsage } from './types';
import { lastSequence, responsesNeedsDecode } from './responses-scan';
import { eventTypeOf, num, obj, parseObject, reencoder } from './wire';

/** What one stream remembers so the errors it writes continue its numbering and name its response. */
interface ResponsesState {
  /** The last `sequence_number` relayed (-1 before any). */
  sequence: number;
  /** The client already has the events numbered up to this (a resume's `starting_after`; -1: none). */
  clientHas: number;
  responseId: string | undefined;
  model: string | undefined;
  createdAt: number | undefined;
}

/**
 * The OpenAI error `{type, code, message, param}` of an error the upstream sent or tidegate
 * raised; an upstream HTTP error answered in OpenAI's error JSON keeps the upstream's.
 */
function errorFields(raised: unknown): { type: string; code: string | number | null; message: string; param: string | null } {
  const error = upstreamErrorOf(raised, answerError);
  if (error instanceof UpstreamStreamError) return { type: error.type, code: error.providerCode, message: error.message, param: error.param };
  return { type: 'tidegate_error', code: codeOf(error), message: messageOf(error), param: null };
}

/** The upstream's error in an error answer, `{"error":{"message","type","code","param"}}`, else `undefined`. */
function answerError(body: Record<string, unknown>, text: string): UpstreamStreamError | undefined {
  return obj(body.error) === undefined ? undefined : upstreamError(body, text, false);
}

function usageOf(response: Record<string, unknown> | undefined): TokenUsage | undefined {
  const u = obj(response?.usage);
  if (u === undefined) return undefined;
  return { inputTokens: num(u.input_tokens), outputTokens: num(u.output_tokens), totalTokens: num(u.total_tokens) };
}

/** An upstream `error` event (`{error: {type, code, message}}` as captured, or flat `{code, message}` as documented) or a `response.failed`. */
function upstreamError(body: Record<string, unknown> | undefined, data: string, failed: boolean): UpstreamStreamError {
  const e = failed ? obj(obj(body?.response)?.error) : (obj(body?.error) ?? body);
  const code = e?.code;
  const param = e?.param;
  return new UpstreamStreamError(
    typeof e?.message === 'string' ? e.message : data,
    typeof e?.type === 'string' && e.type !== 'error' ? e.type : failed ? 'server_error' : 'server_error',
    typeof code === 'string' || typeof code === 'number' ? code : null,
    typeof param === 'string' ? param : null,
  );
}

/**
 * The JSON object the `data:` lines of one encoded SSE event carry (several lines joined by LF,
 * as the WHATWG parser joins them), or `undefined` when it carries none or not an object.
 */
export function eventDataOf(bytes: Buffer): Record<string, unknown> | undefined {
  const data: string[] = [];
  for (const line of bytes.toString('utf8').split(/\r\n|\r|\n/)) {
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return data.length === 0 ? undefined : parseObject(data.join('\n'));
}

/**
 * The `response.id` a Responses event names (`response.created` names it first), read from the
 * event's encoded SSE bytes as the client got them; `undefined` for an event without one.
 */
export function responseIdOf(bytes: Buffer): string | undefined {
  if (bytes.indexOf('"response"') === -1) return undefined;
  const id = obj(eventDataOf(bytes)?.response)?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** One stream's Responses adapter (see {@link responsesAdapter}). */
function responsesStream(): ProviderAdapter {
  const state: ResponsesState = { sequence: -1, clientHas: -1, responseId: undefined, model: undefined, createdAt: undefined };
  // Every field of responsesAdapter, written out: V8 builds a literal that spreads an object and
  // adds keys it lacks (`observe`, `needsDecode`) on its slow path, about 7 µs per stream.
  const shared = responsesAdapter;
  return {
    name: shared.name,
    requiresTerminator: shared.requiresTerminator,
    defaultForwardHeaders: shared.defaultForwardHeaders,
    forStream: shared.forStream,
    authHeaders: shared.authHeaders,
    sendHttpError: shared.sendHttpError,
    nonStreamBody: shared.nonStreamBody,
    resumeAliasOf: shared.resumeAliasOf,
    decoder() {
      const wireOf = reencoder();
      return (e: SseEvent): GatewayEvent => {
        const wire = wireOf(e);
        const body = parseObject(e.data);
        const type = eventTypeOf(e, body);
        // An upstream `error` or `response.failed` never reaches the client: formatError writes
        // the gateway's own pair in its place, numbered on from the last event the client got.
        const seq = type === 'error' || type === 'response.failed' ? undefined : num(body?.sequence_number);
        if (seq !== undefined && seq > state.sequence) state.sequence = seq;
        const response = obj(body?.response);
        if (response !== undefined) {
          if (typeof response.id === 'string') state.responseId = response.id;
          if (typeof response.model === 'string') state.model = response.model;
          if (typeof response.created_at === 'number') state.createdAt = response.created_at;
        }
        switch (type) {
          case 'response.output_text.delta':
            return typeof body?.delta === 'string' && body.delta.length > 0 ? { type: 'delta', text: body.delta, wire } : { type: 'frame', wire };
          case 'response.completed':
          case 'response.incomplete': {
            const usage = usageOf(response);
            return usage === undefined ? { type: 'done', wire } : { type: 'done', wire, usage };
          }
          case 'response.failed':
            return { type: 'error', error: upstreamError(body, e.data, true), wire };
          case 'error':
            return { type: 'error', error: upstreamError(body, e.data, false), wire };
          default:
            return { type: 'frame', wire };
        }
      };
    },
    observe(event) {
      const seq = lastSequence(event);
      if (seq !== undefined && seq > state.sequence) state.sequence = seq;
      if (event.indexOf('"response"') === -1) return;
      const response = obj(eventDataOf(event)?.response);
      if (typeof response?.id === 'string') state.responseId = response.id;
      if (typeof response?.model === 'string') state.model = response.model;
      if (typeof response?.created_at === 'number') state.createdAt = response.created_at;
    },
    resumedAfter(position) {
      state.clientHas = position;
    },
    // The byte relay decodes a frame (after the first text) only when it may end the stream.
    needsDecode: (frame) => responsesNeedsDecode(frame, state),
    formatError(error): SseFrame {
      const { type, code, message, param } = errorFields(error);
      const errorEvent = { type: 'error', sequence_number: ++state.sequence, code, message, param, error: { type, code, message, param } };
      const failed = {
        type: 'response.failed',
        sequence_number: ++state.sequence,
        response: {
          id: state.responseId ?? 'resp_tidegate',
          object: 'response',
          created_at: state.createdAt ?? Math.floor(Date.now() / 1000),
          status: 'failed',
          error: { code, message },
          incomplete_details: null,
          model: state.model ?? null,
          output: [],
          usage: null,
        },
      };
      // A resume after these numbers (its client read them before it left) gets neither again.
      const unread = (event: string, body: { sequence_number: number }): string => (body.sequence_number > state.clientHas ? encodeSse({ event, data: JSON.stringify(body) }) : '');
      return new SseFrame(Buffer.from(unread('error', errorEvent) + unread('response.failed', failed)));
    },
  };
}

/**
 * OpenAI Responses (`POST /v1/responses`): `event: <type>` + `data: {"type": <type>,
 * "sequence_number": n, …}` frames from `response.created` to one terminal event,
 * `response.completed`, `response.incomplete` or `response.failed`; no `[DONE]`. Text is in
 * `response.output_text.delta` (`delta`), usage in the terminal event's `response.usage`
 * (`input_tokens`, `output_tokens`). An upstream `error` event or `response.failed` ends the
 * stream as an error; EOF before a terminal event is a truncation.
 *
 * Errors after the first byte are written in the protocol, so openai-node raises them
 * (`APIError` on the `error` event's `error` object): an `error` event (`code`, `message` at the
 * top level as documented, and an `error` object as the API sends it) then `response.failed`
 * with `error: {code, message}`, numbered after the last `sequence_number` relayed. That state is
 * per stream: the relay takes {@link ProviderAdapter.forStream}'s adapter.
 */
export const responsesAdapter: ProviderAdapter = {
  name: 'openai',
  requiresTerminator: true,
  defaultForwardHeaders: ['content-type', 'openai-organization', 'openai-project', 'openai-beta', 'x-request-id'],
  forStream: responsesStream,
  decoder() {
    return responsesStream().decoder();
  },
  authHeaders(apiKey): Record<string, string> {
    return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  },
  formatError(error): SseEventInit | SseFrame {
    return responsesStream().formatError(error);
  },
  sendHttpError(res: ServerResponse, error) {
    const { type, code, message, param } = errorFields(error);
    writeJsonError(res, httpStatusOf(error), { error: { message, type, code, param } });
  },
  nonStreamBody(body) {
    return { ...body, stream: false };
  },
  // `GET /v1/responses/{id}?stream=true&starting_after=n` resumes by the response id.
  resumeAliasOf: responseIdOf,
};
