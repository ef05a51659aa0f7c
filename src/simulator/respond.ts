/**
 * One API exchange from arrival to reply: it is opened in the ledger, its `x-sim-*` headers
 * and JSON body are read, its transcript chosen, and it is answered in its route's dialect:
 * a 4xx for a malformed request, the `status:<code>` fault, a plain JSON completion after
 * `ttftMs`, or a stream (see {@link streamReply}).
 */
import type * as http from 'node:http';
import { parseJsonObject, readBody } from './body';
import { Exchange, reset, sendJson } from './exchange';
import { faultStatus } from './faults';
import type { Ledger } from './ledger';
import { readOverrides, RequestOverrides } from './overrides';
import type { SimDialect, SimFinishReason, SimResponseContext } from './protocol';
import { RequestError } from './request-error';
import { Settings, transcriptRegistry } from './settings';
import { streamReply } from './stream';
import { sleep } from './timing';
import { findTranscript, Transcript } from './transcripts';
import type { SimRequestRecord } from './types';

/** What an exchange needs from its simulator: the settings current at each step, the ledger. */
export interface SimulatorHost {
  settings(): Settings;
  readonly ledger: Ledger;
}

/** An API route: the record's route name and the dialect it speaks. */
export interface SimRoute {
  readonly route: SimRequestRecord['route'];
  readonly dialect: SimDialect;
  /** The response id's prefix (default `chatcmpl-sim` / `msg_sim`). */
  readonly idPrefix?: string | undefined;
}

/** Answers one API request on `target`; resolves when the reply ended or the exchange did. */
export async function respond(host: SimulatorHost, req: http.IncomingMessage, res: http.ServerResponse, target: SimRoute): Promise<void> {
  const s = host.settings();
  const ex = host.ledger.open(target.route, res);
  const { record } = ex;
  const { dialect } = target;
  let body: Record<string, unknown>;
  let o: RequestOverrides;
  let transcript: Transcript;
  try {
    o = readOverrides(req, s);
    const raw = await readBody(req, s.maxBodyBytes);
    if (ex.ended.signal.aborted) return;
    body = parseJsonObject(raw);
    // As the real APIs do: `"stream": "true"` is a client's bug, not a request for one answer.
    if (body.stream !== undefined && typeof body.stream !== 'boolean') throw new RequestError(400, `stream must be a boolean, got ${JSON.stringify(body.stream)}`);
    const model = typeof body.model === 'string' ? body.model : '';
    record.model = model;
    // The registry as configured now: configure() may have run while the body arrived.
    transcript = chooseTranscript(o.transcript, model, s.defaultTranscript, transcriptRegistry(host.settings()));
  } catch (err) {
    if (ex.ended.signal.aborted) return;
    const status = err instanceof RequestError ? err.status : 400;
    sendJson(ex, status, dialect.errorBody(status, err instanceof Error ? err.message : String(err)), 'rejected', { connection: 'close' });
    return;
  }

  record.transcript = transcript.name;
  record.stream = body.stream === true;
  record.fault = o.fault;
  host.ledger.emitter.emit('request', record);

  const ctx = responseContext(ex, target, body, transcript);

  const status = faultStatus(o.fault);
  if (status !== undefined) {
    const retry = status === 429 || status === 503 || status === 529 ? { 'retry-after': String(s.retryAfterSeconds) } : undefined;
    sendJson(ex, status, dialect.errorBody(status, `Simulated HTTP ${status} (x-sim-fault).`), 'faulted', retry);
    return;
  }

  const max = dialect.maxTokens(body);
  const total = transcript.tokens.length;
  const limit = max !== undefined && max < total ? max : total;
  const reason: SimFinishReason = limit < total ? 'length' : 'stop';

  if (!(await sleep(o.ttftMs, ex.ended.signal))) return;

  if (record.stream) {
    await streamReply(ex, { dialect, ctx, transcript, overrides: o, limit, reason, splitDelayMs: s.splitDelayMs });
    return;
  }
  if (o.fault !== 'none' && o.fault !== 'hang') {
    // Mid-stream faults have no middle here; reset and stall still apply.
    if (o.fault === 'reset') return reset(ex);
    if (o.fault === 'stall') return;
    sendJson(ex, 500, dialect.errorBody(500, 'The server had an error while processing your request.'), 'faulted');
    return;
  }
  if (o.fault === 'hang') {
    record.status = 200;
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': record.id });
    res.flushHeaders();
    return;
  }
  let text = '';
  for (let i = 0; i < limit; i++) text += transcript.tokens[i];
  record.tokensWritten = limit;
  sendJson(ex, 200, dialect.completion(ctx, text, reason, limit), 'completed');
}

/**
 * The `x-sim-transcript` header's transcript (400 if unknown), else the one `model` names,
 * else the default (500 if that does not exist).
 */
function chooseTranscript(
  headerName: string | undefined,
  model: string,
  defaultName: string,
  reg: Readonly<Record<string, Transcript>>,
): Transcript {
  if (headerName !== undefined) {
    const t = findTranscript(headerName, reg);
    if (!t) throw new RequestError(400, `unknown x-sim-transcript ${JSON.stringify(headerName)}`);
    return t;
  }
  const t = findTranscript(model, reg) ?? findTranscript(defaultName, reg);
  if (!t) throw new RequestError(500, `default transcript ${JSON.stringify(defaultName)} does not exist`);
  return t;
}

/** The ids, model echo and usage inputs the dialect renders the reply with. */
function responseContext(ex: Exchange, target: SimRoute, body: Record<string, unknown>, transcript: Transcript): SimResponseContext {
  const { record, seq: n } = ex;
  return {
    id: `${target.idPrefix ?? (target.route === 'openai' ? 'chatcmpl-sim' : 'msg_sim')}${n}`,
    model: record.model || transcript.name,
    created: Math.floor(record.startedAt / 1000),
    promptTokens: Math.max(1, Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? body.input ?? '').length / 4)),
    progress: { sequence: 0, text: '' },
    includeUsage:
      typeof body.stream_options === 'object' &&
      body.stream_options !== null &&
      (body.stream_options as Record<string, unknown>).include_usage === true,
  };
}
