/**
 * The simulator's HTTP routes: `GET /healthz`, `GET /v1/models` (the transcripts) and
 * `GET /v1/models/{model}` (one of them, else OpenAI's 404 `model_not_found`), the API
 * routes with their dialects (OpenAI `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/completions`,
 * Anthropic `POST /v1/messages`), the JSON routes (`POST /v1/embeddings`,
 * `POST /v1/messages/count_tokens`), and a JSON 404 / 405 for anything else.
 */
import type * as http from 'node:http';
import { anthropicDialect } from './anthropic';
import { completionsDialect } from './completions';
import { JSON_ROUTES, respondJson } from './json-routes';
import { openaiDialect } from './openai';
import { respond, SimRoute, SimulatorHost } from './respond';
import { responsesDialect } from './responses';
import { transcriptRegistry } from './settings';

const ROUTES: Record<string, SimRoute> = {
  '/v1/chat/completions': { route: 'openai', dialect: openaiDialect },
  '/v1/completions': { route: 'openai', dialect: completionsDialect, idPrefix: 'cmpl-sim' },
  '/v1/responses': { route: 'openai', dialect: responsesDialect, idPrefix: 'resp_sim' },
  '/v1/messages': { route: 'anthropic', dialect: anthropicDialect },
};

/** Routes one request; API requests go to {@link respond}, and only they are counted. */
export async function handle(host: SimulatorHost, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
    return;
  }
  if (req.method === 'GET' && path === '/v1/models') {
    const data = Object.values(transcriptRegistry(host.settings())).map(modelObject);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data }));
    return;
  }
  if (req.method === 'GET' && path.startsWith(MODELS_PREFIX) && !path.includes('/', MODELS_PREFIX.length)) {
    const id = decodeModelId(path.slice(MODELS_PREFIX.length));
    const transcript = Object.values(transcriptRegistry(host.settings())).find((t) => t.name === id);
    res.writeHead(transcript ? 200 : 404, { 'content-type': 'application/json' });
    if (transcript) res.end(JSON.stringify(modelObject(transcript)));
    else res.end(JSON.stringify({ error: { message: `The model '${id}' does not exist`, type: 'invalid_request_error', param: 'model', code: 'model_not_found' } }));
    return;
  }
  if (req.method === 'POST' && JSON_ROUTES[path] !== undefined) return respondJson(req, res, path, host.settings().maxBodyBytes);
  const target = ROUTES[path];
  if (!target || req.method !== 'POST') {
    req.resume();
    res.writeHead(target ? 405 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `${req.method} ${path} is not served by the simulator`, type: 'invalid_request_error' } }));
    return;
  }
  return respond(host, req, res, target);
}

const MODELS_PREFIX = '/v1/models/';

/** A transcript as OpenAI's model object. */
function modelObject(t: { name: string }): { id: string; object: 'model'; created: number; owned_by: string } {
  return { id: t.name, object: 'model', created: 0, owned_by: 'tidegate-simulator' };
}

/** A path segment's model id (`org%2Fmodel` → `org/model`); a malformed escape stays as sent. */
function decodeModelId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
