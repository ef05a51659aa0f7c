import type { Request, Response } from 'express';
import { eventDataOf } from '../../providers/responses';
import { num, obj } from '../../providers/wire';
import { recordResumeRefusal, serveResume, type ResumeEndpointDeps } from './endpoints';
import { ResponseInProgressError, ResumeForbiddenError, ResumeGapError, ResumeRequestError, StreamNotFoundError } from './errors';
import { singleQueryValue } from './query';
import { credentialHash, credentialMatches } from './ids';
import type { LogSnapshot, StoredStream } from './store';

/** Path of OpenAI's retrieve under a resumable Responses route's own path: `GET <route>/{response_id}`. */
export const RESPONSES_RETRIEVE_SUFFIX = '/:responseId';

/** The Responses events that end a stream, each carrying the final `response` object. */
const TERMINAL_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * Serves OpenAI's `GET /v1/responses/{response_id}` on a resumable Responses route (`routePath`)
 * for a stream that route relayed, whatever the upstream supports: the response id is the
 * `response.id` its client read in `response.created`, which the store maps to the stream.
 *
 * | Query | Answer |
 * |---|---|
 * | `stream=true&starting_after=n` | the events with `sequence_number` > `n`, then the live ones, ending as the original: its error events too, those numbered > `n` (see {@link seqAfterSequenceNumber}) |
 * | `stream=true` | the whole stream, from `response.created` |
 * | no `stream=true` | the final `response` object of the log's `response.completed` / `incomplete` / `failed`; 409 `ERR_TIDEGATE_RESPONSE_IN_PROGRESS` while it streams |
 *
 * Refusals in OpenAI's error shape, before any header: 404 an unknown, expired or other route's
 * response, 403 another credential than the request that started it, 410
 * `ERR_TIDEGATE_RESUME_GAP` when events after `n` left the window, 400 a malformed
 * `starting_after` or one past what was relayed.
 *
 * `resolving` is the stream id the response id names, when the caller already asked the store.
 * Resolves when the answer ended.
 */
export async function serveResponsesRetrieve(req: Request, res: Response, routePath: string, deps: ResumeEndpointDeps, resolving?: Promise<string | undefined>): Promise<void> {
  const responseId = String(req.params.responseId);
  const resolved = await (resolving ?? deps.service.resolve(responseId)).catch(() => undefined);
  let query: RetrieveQuery;
  try {
    query = retrieveQuery(req);
  } catch (err) {
    recordResumeRefusal(deps, req, res, err, { route: routePath });
    deps.adapterOf(routePath).sendHttpError(res, err);
    return;
  }
  if (query.stream) {
    return serveResume(req, res, resolved ?? '', deps, {
      ownRoute: routePath,
      resumeAt: async (stored) => seqAfterSequenceNumber(await stored.snapshot(), query.startingAfter),
      position: query.startingAfter,
    });
  }
  try {
    const stored = resolved === undefined ? undefined : await deps.service.find(resolved);
    if (stored === undefined || stored.meta.routePath !== routePath) throw new StreamNotFoundError(`no resumable response ${JSON.stringify(responseId.slice(0, 80))} (unknown, expired, or the upstream gave that id to more than one stream)`);
    if (!credentialMatches(stored.meta.credentialHash, credentialHash(req.headers))) throw new ResumeForbiddenError();
    res.json(await finalResponse(stored));
  } catch (err) {
    recordResumeRefusal(deps, req, res, err, { route: routePath });
    if (!res.headersSent) deps.adapterOf(routePath).sendHttpError(res, err);
    else res.destroy();
  }
}

/** The `response` object the log's terminal event carries. */
async function finalResponse(stored: StoredStream): Promise<Record<string, unknown>> {
  const log = await stored.snapshot();
  if (log.ended === undefined) throw new ResponseInProgressError();
  const last = log.events.length === 0 ? undefined : eventDataOf(log.events[log.events.length - 1] as Buffer);
  const response = obj(last?.response);
  if (typeof last?.type !== 'string' || !TERMINAL_TYPES.has(last.type) || response === undefined) {
    throw new StreamNotFoundError('the response ended without a final response object (the stream failed before its terminal event)');
  }
  return response;
}

/** What a Responses retrieve asks for: the stream (`stream=true`) and after which `sequence_number`. */
export interface RetrieveQuery {
  readonly stream: boolean;
  /** `starting_after`, `undefined` when absent. */
  readonly startingAfter: number | undefined;
}

/**
 * The query of a Responses retrieve, checked before anything is looked up or admitted.
 *
 * @throws {ResumeRequestError} (400) when `stream` or `starting_after` is repeated or bracketed
 * (see {@link singleQueryValue}), or `starting_after` is not a non-negative integer
 */
export function retrieveQuery(req: Request): RetrieveQuery {
  const stream = singleQueryValue(req, 'stream') === 'true';
  const value = singleQueryValue(req, 'starting_after');
  if (value !== undefined && !/^\d{1,15}$/.test(value)) throw new ResumeRequestError('starting_after must be the sequence_number of an event (a non-negative integer)');
  return { stream, startingAfter: value === undefined ? undefined : Number(value) };
}

/**
 * The seq of the last event a client that read every event up to `sequence_number`
 * `startingAfter` has, from a stream's log: the last event numbered `<= startingAfter` (an event
 * with no `sequence_number` after it is replayed). `undefined` (no `starting_after`): 0, the
 * whole stream.
 *
 * Relies on `sequence_number` growing along the stream, as OpenAI numbers it. When the log no
 * longer starts at the first event, a `startingAfter` before its first kept event resumes only
 * when that event is numbered `startingAfter + 1` (nothing of the client's can be missing);
 * otherwise {@link ResumeGapError}. A `startingAfter` past the last number relayed is a
 * {@link ResumeRequestError} while the stream runs; once it ended it resumes after the last event
 * (the gateway's own error events are numbered on, past the log).
 */
export function seqAfterSequenceNumber(log: LogSnapshot, startingAfter: number | undefined): number {
  if (startingAfter === undefined) return 0;
  let after: number | undefined;
  let firstNumber: number | undefined;
  let lastNumber: number | undefined;
  for (let i = 0; i < log.events.length; i++) {
    const n = num(eventDataOf(log.events[i] as Buffer)?.sequence_number);
    if (n === undefined) continue;
    firstNumber ??= n;
    lastNumber = n;
    if (n > startingAfter) break;
    after = log.firstSeq + i;
  }
  if (after === undefined) {
    if (log.firstSeq <= 1 || firstNumber === startingAfter + 1) return log.firstSeq - 1;
    throw new ResumeGapError(startingAfter, log.firstSeq);
  }
  if (lastNumber !== undefined && startingAfter > lastNumber && log.ended === undefined) {
    throw new ResumeRequestError(`sequence_number ${startingAfter} was never sent (the last is ${lastNumber})`);
  }
  return after;
}
