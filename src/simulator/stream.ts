/**
 * The streaming reply: the SSE status line, then the dialect's preamble, the transcript's
 * tokens paced at `tokensPerSecond` (or in batches that yield to the event loop when the rate
 * is `Infinity`), and its finish frames, each frame one write that waits for 'drain'. A
 * mid-stream fault replaces the rest of the stream at its token position.
 */
import { end, Exchange, reset, writeFrame } from './exchange';
import type { SimFault } from './faults';
import type { RequestOverrides } from './overrides';
import type { SimDialect, SimFinishReason, SimResponseContext } from './protocol';
import { sleep, yieldToLoop } from './timing';
import type { Transcript } from './transcripts';

/** Tokens written synchronously in unlimited mode before yielding to the event loop. */
const UNLIMITED_BATCH = 64;

/** What one streaming reply replays and how. */
export interface StreamPlan {
  readonly dialect: SimDialect;
  readonly ctx: SimResponseContext;
  readonly transcript: Transcript;
  /** The request's settings after its `x-sim-*` headers. */
  readonly overrides: RequestOverrides;
  /** Tokens to replay (the transcript cut at the request's max tokens). */
  readonly limit: number;
  readonly reason: SimFinishReason;
  /** Pause between the halves of a split frame, ms. */
  readonly splitDelayMs: number;
}

/** Streams the reply; resolves when it ended, faulted, or the exchange ended first. */
export async function streamReply(ex: Exchange, plan: StreamPlan): Promise<void> {
  const { dialect, ctx, transcript, overrides: o, limit, reason, splitDelayMs } = plan;
  const { record, res } = ex;
  record.status = 200;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': record.id,
    'x-sim-transcript': transcript.name,
  });
  if (o.fault === 'hang') {
    res.flushHeaders();
    return;
  }
  const split = o.splitUtf8 || transcript.splitUtf8 === true;
  for (const f of dialect.preamble(ctx)) {
    if (!(await writeFrame(ex, f, split, splitDelayMs))) return;
  }

  const midFault = o.fault !== 'none';
  const faultAt = Math.min(o.faultAfterTokens, limit);
  const intervalMs = Number.isFinite(o.tokensPerSecond) ? 1000 / o.tokensPerSecond : 0;
  const start = Date.now();
  for (let i = 0; i <= limit; i++) {
    if (midFault && i === faultAt) return midStreamFault(ex, dialect, ctx, o.fault);
    if (i === limit) break;
    if (intervalMs > 0) {
      const wait = start + i * intervalMs - Date.now();
      if (wait > 0 && !(await sleep(wait, ex.ended.signal))) return;
    } else if (i % UNLIMITED_BATCH === UNLIMITED_BATCH - 1 && !(await yieldToLoop(ex.ended.signal))) {
      return;
    }
    if (!(await writeFrame(ex, dialect.token(ctx, transcript.tokens[i]), split, splitDelayMs))) return;
    record.tokensWritten++;
  }
  for (const f of dialect.finish(ctx, reason, limit)) {
    if (!(await writeFrame(ex, f, split, splitDelayMs))) return;
  }
  end(ex, 'completed');
}

function midStreamFault(ex: Exchange, dialect: SimDialect, ctx: SimResponseContext, fault: SimFault): void {
  switch (fault) {
    case 'error-midstream':
      end(ex, 'faulted', Buffer.from(dialect.errorFrame(ctx), 'utf8'));
      return;
    case 'truncate':
      end(ex, 'faulted');
      return;
    case 'reset':
      reset(ex);
      return;
    default:
      // 'stall' (and 'hang', handled earlier): write nothing more; the client's leaving ends it.
      return;
  }
}
