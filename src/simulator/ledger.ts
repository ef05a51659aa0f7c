/**
 * The simulator's accounting: the counters behind `stats`, the request records behind
 * `requests` (finished ones trimmed to `maxRecords`), the set of live exchanges, and the
 * events. An exchange is opened here on arrival and finalized here exactly once, when its
 * response closes or the simulator closes it, which is where its outcome is decided.
 */
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import type { Exchange, Mutable } from './exchange';
import type { SimRequestRecord, SimulatorStats } from './types';

/** The accounting of one simulator. */
export interface Ledger {
  /** Emits the `SimulatorEvents` (`request`, `request-end`, `request-aborted`). */
  readonly emitter: EventEmitter;
  /** A snapshot of the counters. */
  stats(): SimulatorStats;
  /** Active and recent records, oldest first. */
  requests(): readonly SimRequestRecord[];
  /** Counts a new API request and returns its exchange; its response's 'close' finalizes it. */
  open(route: SimRequestRecord['route'], res: http.ServerResponse): Exchange;
  /** Destroys every live response and finalizes it as `'closed'`; later aborts count as closed too. */
  closeLive(): void;
}

/** Creates the accounting; `maxRecords()` is read at each trim, so `configure()` applies to it. */
export function createLedger(maxRecords: () => number): Ledger {
  const emitter = new EventEmitter();
  const counters: Mutable<SimulatorStats> = {
    requests: 0,
    active: 0,
    completed: 0,
    aborted: 0,
    faulted: 0,
    rejected: 0,
    closed: 0,
    bytesWritten: 0,
    drainWaits: 0,
  };
  const records: Mutable<SimRequestRecord>[] = [];
  const live = new Set<Exchange>();
  let seq = 0;
  let closing = false;

  function pushRecord(record: Mutable<SimRequestRecord>): void {
    records.push(record);
    // Trim finished records beyond the cap; active ones are always kept.
    let excess = records.length - maxRecords() - live.size;
    for (let i = 0; excess > 0 && i < records.length; ) {
      if (records[i].outcome !== 'active') {
        records.splice(i, 1);
        excess--;
      } else i++;
    }
  }

  function finalize(ex: Exchange): void {
    const r = ex.record;
    if (r.outcome !== 'active') return;
    if (ex.destroyedByUs || ex.res.writableFinished) r.outcome = ex.endAs;
    else r.outcome = closing ? 'closed' : 'aborted';
    r.endedAt = Date.now();
    live.delete(ex);
    counters.active--;
    counters[r.outcome as 'completed' | 'aborted' | 'faulted' | 'rejected' | 'closed']++;
    ex.ended.abort();
    if (r.outcome === 'aborted') emitter.emit('request-aborted', r);
    emitter.emit('request-end', r);
  }

  return {
    emitter,
    stats: () => ({ ...counters }),
    requests: () => records.slice(),
    open(route, res) {
      const n = ++seq;
      const record: Mutable<SimRequestRecord> = {
        id: `sim-${n}`,
        route,
        model: '',
        transcript: '',
        stream: false,
        fault: 'none',
        status: 0,
        startedAt: Date.now(),
        endedAt: undefined,
        bytesWritten: 0,
        tokensWritten: 0,
        drainWaits: 0,
        outcome: 'active',
      };
      const ex: Exchange = { seq: n, record, res, ended: new AbortController(), totals: counters, endAs: 'completed', destroyedByUs: false };
      counters.requests++;
      counters.active++;
      live.add(ex);
      pushRecord(record);
      res.once('close', () => finalize(ex));
      return ex;
    },
    closeLive() {
      closing = true;
      for (const ex of [...live]) {
        ex.endAs = 'closed';
        ex.destroyedByUs = true;
        ex.res.destroy();
        finalize(ex);
      }
    },
  };
}
