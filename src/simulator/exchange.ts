/**
 * One API exchange and the only ways its response is written: frame writes that honour
 * 'drain', the end, a JSON answer and a TCP reset. Every body byte and every drain wait is
 * counted here, in the exchange's record and in the simulator-wide totals.
 */
import type * as http from 'node:http';
import { sleep } from './timing';
import type { SimRequestOutcome, SimRequestRecord, SimulatorStats } from './types';

/** `T` with its `readonly` modifiers removed: the simulator's own view of its records. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** An API request in flight: its live record, its response and the signal its end aborts. */
export interface Exchange {
  /** The request's sequence number, the `<n>` of `sim-<n>`. */
  readonly seq: number;
  readonly record: Mutable<SimRequestRecord>;
  readonly res: http.ServerResponse;
  /** Aborted once the exchange ended, whatever the outcome: every wait stops on it. */
  readonly ended: AbortController;
  /** The simulator-wide counters this exchange adds its bytes and drain waits to. */
  readonly totals: Mutable<SimulatorStats>;
  /** The outcome to report if the response finishes, or if we destroy it ourselves. */
  endAs: SimRequestOutcome;
  destroyedByUs: boolean;
}

/** Index just after the lead byte of the first multi-byte UTF-8 character, or -1. */
function splitPoint(buf: Buffer): number {
  for (let i = 0; i < buf.length; i++) if (buf[i] >= 0xc0) return i + 1;
  return -1;
}

/** One `res.write()`; when it returns false, resolves on 'drain' (`true`) or the end (`false`). */
export async function write(ex: Exchange, data: Buffer): Promise<boolean> {
  const signal = ex.ended.signal;
  if (signal.aborted) return false;
  ex.record.bytesWritten += data.length;
  ex.totals.bytesWritten += data.length;
  if (ex.res.write(data)) return true;
  ex.record.drainWaits++;
  ex.totals.drainWaits++;
  return new Promise((resolve) => {
    const onDrain = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    };
    const onAbort = (): void => {
      ex.res.off('drain', onDrain);
      resolve(false);
    };
    ex.res.once('drain', onDrain);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Writes one SSE frame; with `splitUtf8`, as two writes cut inside its first multi-byte
 * character, `splitDelayMs` apart. Resolves `false` once the exchange ended.
 */
export async function writeFrame(ex: Exchange, text: string, splitUtf8: boolean, splitDelayMs: number): Promise<boolean> {
  const buf = Buffer.from(text, 'utf8');
  const at = splitUtf8 ? splitPoint(buf) : -1;
  if (at < 0) return write(ex, buf);
  // The pause keeps the halves in separate TCP segments, so the reader sees the cut.
  return (
    (await write(ex, buf.subarray(0, at))) &&
    (await sleep(splitDelayMs, ex.ended.signal)) &&
    write(ex, buf.subarray(at))
  );
}

/** Ends the response (with `data`, counted), to be reported as `outcome` once it finishes. */
export function end(ex: Exchange, outcome: SimRequestOutcome, data?: Buffer): void {
  ex.endAs = outcome;
  if (data) {
    ex.record.bytesWritten += data.length;
    ex.totals.bytesWritten += data.length;
  }
  ex.res.end(data);
}

/** Answers with `status` and `body` as JSON (`content-length`, `x-request-id`, `extra` headers). */
export function sendJson(ex: Exchange, status: number, body: unknown, outcome: SimRequestOutcome, extra: http.OutgoingHttpHeaders = {}): void {
  const data = Buffer.from(JSON.stringify(body), 'utf8');
  ex.record.status = status;
  ex.res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': data.length,
    'x-request-id': ex.record.id,
    ...extra,
  });
  end(ex, outcome, data);
}

/** Destroys the connection with a TCP RST where the socket supports it; outcome `'faulted'`. */
export function reset(ex: Exchange): void {
  ex.endAs = 'faulted';
  ex.destroyedByUs = true;
  const socket = ex.res.socket;
  if (socket && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else ex.res.destroy();
}
