import { TidegateError } from '../../errors';
import type { RefusalReason } from '../admission';

/**
 * A resume asked for events that already left the stream's replay window
 * (`ERR_TIDEGATE_RESUME_GAP`, HTTP 410): replaying from the oldest kept event would skip some.
 * Refused before any header, so the client can fall back to asking again.
 */
export class ResumeGapError extends TidegateError {
  /** HTTP status of the refusal. */
  readonly status = 410;

  constructor(
    /** The last event the client has. */
    readonly afterSeq: number,
    /** The oldest event the log still holds. */
    readonly firstSeq: number,
  ) {
    super('ERR_TIDEGATE_RESUME_GAP', `events after ${afterSeq} are no longer all in the replay window (it starts at ${firstSeq})`);
  }
}

/** No stream with this id is known to the store, or its retention ended (`ERR_TIDEGATE_STREAM_NOT_FOUND`, HTTP 404). */
export class StreamNotFoundError extends TidegateError {
  readonly status = 404;

  constructor(message = 'no resumable stream with this id (unknown or expired)') {
    super('ERR_TIDEGATE_STREAM_NOT_FOUND', message);
  }
}

/** A resume presented another credential than the request that started the stream (`ERR_TIDEGATE_RESUME_FORBIDDEN`, HTTP 403). */
export class ResumeForbiddenError extends TidegateError {
  readonly status = 403;

  constructor() {
    super('ERR_TIDEGATE_RESUME_FORBIDDEN', 'the resume must present the credential of the request that started the stream');
  }
}

/** A resume's `Last-Event-ID` or `after` does not name an event of this stream (`ERR_TIDEGATE_BAD_REQUEST`, HTTP 400). */
export class ResumeRequestError extends TidegateError {
  readonly status = 400;

  constructor(message: string) {
    super('ERR_TIDEGATE_BAD_REQUEST', message);
  }
}

/**
 * The instance producing a followed stream stopped holding its lease (it died or lost Redis)
 * before the stream ended (`ERR_TIDEGATE_UPSTREAM_LOST`, HTTP 502 before headers).
 */
export class UpstreamLostError extends TidegateError {
  readonly status = 502;

  constructor(message = 'the instance producing this stream is gone; the rest of the answer is lost') {
    super('ERR_TIDEGATE_UPSTREAM_LOST', message);
  }
}

/**
 * A resumable stream's next event did not fit in `resumeStore.maxMemoryBytes`, even after the
 * store dropped finished logs and the history of running ones (`ERR_TIDEGATE_RESUME_STORE_FULL`,
 * HTTP 503 before headers). The stream ends with it, its log kept: a resume gets the events
 * logged before it, then this error.
 */
export class ResumeStoreFullError extends TidegateError {
  readonly status = 503;

  constructor(maxBytes: number) {
    super('ERR_TIDEGATE_RESUME_STORE_FULL', `the resume store is full (resumeStore.maxMemoryBytes ${maxBytes}); the stream was ended`);
  }
}

/**
 * A Responses retrieve without `stream=true` for a response still streaming
 * (`ERR_TIDEGATE_RESPONSE_IN_PROGRESS`, HTTP 409): the final response object is not known yet;
 * retrieve it with `stream=true` to follow it.
 */
export class ResponseInProgressError extends TidegateError {
  readonly status = 409;

  constructor(message = 'the response is still streaming; retrieve it with stream=true to follow it') {
    super('ERR_TIDEGATE_RESPONSE_IN_PROGRESS', message);
  }
}

/**
 * The `reason` a refused resume is counted and logged under (`tidegate_admission_refusals_total`,
 * the `refused` line): 404 `resume_not_found`, 403 `resume_forbidden`, 410 `resume_gap`, 400
 * `bad_request`, 409 `response_in_progress`. `undefined` for an error that is no refusal of the
 * request (a store failure).
 */
export function resumeRefusalReason(error: unknown): RefusalReason | undefined {
  if (error instanceof StreamNotFoundError) return 'resume_not_found';
  if (error instanceof ResumeForbiddenError) return 'resume_forbidden';
  if (error instanceof ResumeGapError) return 'resume_gap';
  if (error instanceof ResumeRequestError) return 'bad_request';
  if (error instanceof ResponseInProgressError) return 'response_in_progress';
  return undefined;
}
