/**
 * The simulator's JSON-only routes: OpenAI `POST /v1/embeddings` (a deterministic vector per
 * input, floats or base64 as `encoding_format` asks) and Anthropic
 * `POST /v1/messages/count_tokens` (`{input_tokens}`, the request's JSON characters / 4).
 * They answer at once, without transcripts, pacing or faults, and are not counted as streams.
 */
import type * as http from 'node:http';
import { createHash } from 'node:crypto';
import { parseJsonObject, readBody } from './body';
import { RequestError } from './request-error';

/** Length of the simulated embedding vectors unless the request's `dimensions` asks otherwise. */
export const SIM_EMBEDDING_DIMENSIONS = 8;

/** A JSON route: the body in, the answer body out (throws {@link RequestError} for a bad request). */
type JsonRoute = (body: Record<string, unknown>) => unknown;

/** The JSON routes by path, with the error shape of each provider. */
export const JSON_ROUTES: Readonly<Record<string, { route: JsonRoute; errorBody(status: number, message: string): unknown }>> = {
  '/v1/embeddings': { route: embeddings, errorBody: (_s, message) => ({ error: { message, type: 'invalid_request_error', param: null, code: null } }) },
  '/v1/messages/count_tokens': { route: countTokens, errorBody: (_s, message) => ({ type: 'error', error: { type: 'invalid_request_error', message } }) },
};

/** Answers one JSON route request (400 for a malformed body, 413 past `maxBodyBytes`). */
export async function respondJson(req: http.IncomingMessage, res: http.ServerResponse, path: string, maxBodyBytes: number): Promise<void> {
  const target = JSON_ROUTES[path];
  let status = 200;
  let answer: unknown;
  try {
    answer = target.route(parseJsonObject(await readBody(req, maxBodyBytes)));
  } catch (err) {
    status = err instanceof RequestError ? err.status : 400;
    answer = target.errorBody(status, err instanceof Error ? err.message : String(err));
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(answer));
}

function embeddings(body: Record<string, unknown>): unknown {
  const input = body.input;
  const inputs = typeof input === 'string' ? [input] : Array.isArray(input) ? input : undefined;
  if (inputs === undefined || inputs.length === 0) throw new RequestError(400, "'input' must be a string or a non-empty array");
  const dimensions = typeof body.dimensions === 'number' && Number.isInteger(body.dimensions) && body.dimensions > 0 && body.dimensions <= 4096 ? body.dimensions : SIM_EMBEDDING_DIMENSIONS;
  const base64 = body.encoding_format === 'base64';
  const tokens = Math.max(1, Math.ceil(JSON.stringify(inputs).length / 4));
  return {
    object: 'list',
    data: inputs.map((item, index) => {
      const vector = embeddingOf(JSON.stringify(item), dimensions);
      return { object: 'embedding', index, embedding: base64 ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64') : Array.from(vector) };
    }),
    model: typeof body.model === 'string' ? body.model : 'sim-embedding',
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** A unit vector derived from the SHA-256 of `text`: the same text always gives the same vector. */
export function embeddingOf(text: string, dimensions: number): Float32Array {
  const out = new Float32Array(dimensions);
  let seed = createHash('sha256').update(text).digest();
  for (let i = 0; i < dimensions; i++) {
    if (i % 8 === 0 && i > 0) seed = createHash('sha256').update(seed).digest();
    out[i] = seed.readInt32LE((i % 8) * 4) / 2 ** 31;
  }
  const norm = Math.hypot(...out) || 1;
  for (let i = 0; i < dimensions; i++) out[i] /= norm;
  return out;
}

function countTokens(body: Record<string, unknown>): unknown {
  if (!Array.isArray(body.messages)) throw new RequestError(400, 'messages: Field required');
  return { input_tokens: Math.max(1, Math.ceil(JSON.stringify({ system: body.system, messages: body.messages, tools: body.tools }).length / 4)) };
}
