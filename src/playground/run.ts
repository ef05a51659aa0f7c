import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { TidegateError } from '../errors';
import { sendFlow, errorBody, type StreamHandle, type StreamResult } from '../express/send-flow';
import { ByteBudget } from '../flow/budget';
import { addDemand } from '../flow/demand';
import type { Flow, FlowOperator } from '../flow/flow';
import { doOnRequest, limitRate, map, onBackpressureBuffer, onBackpressureDrop, onBackpressureLatest, onDiscard } from '../flow/operators';
import { PacedResponse, type PacedTarget } from './paced-response';
import { simulatedModel, type ProducerStats } from './producer';
import type { Scenario } from './scenario';

/** A run's life: created, streaming, the emulated client still reading the tail, over. */
export type RunState = 'waiting' | 'running' | 'draining' | 'finished';

/** Something that happened in a run, at `tMs` after its start. */
export interface RunNote {
  tMs: number;
  kind: 'start' | 'overflow' | 'drop' | 'cap' | 'limit' | 'producer-done' | 'outcome';
  message: string;
}

/** One stage of the chain as telemetry shows it. */
export interface StageSample {
  name: string;
  /** Demand this stage has received and not yet served, elements; `null` = unbounded (∞); absent for the socket stage. */
  outstanding?: number | null | undefined;
  /** Bytes held in this stage now. */
  bufferedBytes: number;
  /** The byte bound of this stage, `null` when it has none. */
  maxBytes: number | null;
}

/** What the telemetry stream sends every interval. Bytes and ms. */
export interface RunSample {
  id: string;
  label: string;
  state: RunState;
  tMs: number;
  producer: { emitted: number; paused: boolean; stopped: boolean };
  stages: StageSample[];
  /** All bytes held between the producer and the client's reader: the sum of the stages. */
  heldBytes: number;
  /** The most `heldBytes` ever seen (exact for a shared budget, else sampled at every buffer change). */
  peakHeldBytes: number;
  budgetBytes: number;
  /** Bytes written but not yet read by the emulated client (`res.writableLength`). */
  writableLength: number;
  /** Bytes the emulated client has read. */
  consumedBytes: number;
  /** Events and bytes the demand bridge received from the chain. */
  bridgeEvents: number;
  bridgeBytes: number;
  /** Average event size on the wire, bytes (0 before the first event). */
  avgEventBytes: number;
  /** Elements refused or evicted by an overflow strategy, and dropped by drop/latest. */
  overflowed: number;
  dropped: number;
  /** ms from start to the first overflow, if any: the measured "seconds absorbed". */
  firstOverflowMs: number | null;
  notes: RunNote[];
  outcome: { outcome: string; code?: string | undefined; message?: string | undefined } | null;
}

/** Limits a run is held to. */
export interface RunLimits {
  maxRunMs: number;
  unboundedCapBytes: number;
  stallTimeoutMs: number;
  drainDeadlineMs: number;
}

interface Probe {
  requested: number;
  delivered: number;
  bytes: number;
}

const MAX_NOTES = 40;

/** Counts demand (`doOnRequest`) and deliveries (`map`) at one point of the chain. */
function probe(p: Probe): FlowOperator<Buffer, Buffer> {
  return (source: Flow<Buffer>) =>
    source.pipe(
      map<Buffer, Buffer>((v) => {
        p.delivered++;
        p.bytes += v.length;
        return v;
      }),
      doOnRequest<Buffer>((n) => {
        p.requested = addDemand(p.requested, n);
      }),
    );
}

function outstanding(p: Probe): number | null {
  return p.requested === Infinity ? null : p.requested - p.delivered;
}

/**
 * One playground run: a simulated model → the scenario's operators (each stage probed for
 * demand and bytes) → the Express demand bridge `sendFlow` → an emulated client reading at the
 * scenario's bytes/s ({@link PacedResponse}) → the browser.
 */
export class PlaygroundRun {
  readonly id = randomUUID();
  readonly createdAt = Date.now();
  state: RunState = 'waiting';
  private startedAt = 0;
  private finishedAt = 0;
  private readonly producer: ProducerStats = { emitted: 0, paused: false, stopped: false };
  private readonly probes: { producer: Probe; limitRate: Probe; bridge: Probe } = {
    producer: { requested: 0, delivered: 0, bytes: 0 },
    limitRate: { requested: 0, delivered: 0, bytes: 0 },
    bridge: { requested: 0, delivered: 0, bytes: 0 },
  };
  private bufferBytes = 0;
  private discardedBytes = 0;
  private overflowed = 0;
  private dropped = 0;
  private peakHeld = 0;
  private firstOverflowMs: number | null = null;
  private readonly notes: RunNote[] = [];
  private outcome: RunSample['outcome'] = null;
  private readonly budget: ByteBudget;
  private readonly sharedBudget: boolean;
  private handle: StreamHandle | undefined;
  private paced: PacedResponse | undefined;
  private timers: NodeJS.Timeout[] = [];
  private readonly finishedCallbacks: (() => void)[] = [];

  constructor(
    readonly scenario: Scenario,
    private readonly limits: RunLimits,
  ) {
    this.budget = new ByteBudget(scenario.budgetBytes);
    this.sharedBudget = scenario.strategy === 'buffer' && scenario.buffer.bounded;
  }

  /** Calls `fn` once the run is over (at once if it already is). */
  onFinished(fn: () => void): void {
    if (this.state === 'finished') fn();
    else this.finishedCallbacks.push(fn);
  }

  /** Starts streaming to `res`: the browser's data request, or the run's channel on a page's shared stream. */
  start(res: PacedTarget): void {
    if (this.state !== 'waiting') throw new Error('run already started');
    this.state = 'running';
    this.startedAt = performance.now();
    const s = this.scenario;
    this.note('start', describe(s));
    const paced = new PacedResponse(res, s.consumerBytesPerSec);
    this.paced = paced;
    const handle = sendFlow(paced as unknown as ServerResponse, this.chain(), {
      budget: this.budget,
      stallTimeoutMs: this.limits.stallTimeoutMs,
      heartbeatMs: 0,
    });
    this.handle = handle;
    this.timers.push(
      setTimeout(() => {
        this.note('limit', `run time limit of ${this.limits.maxRunMs / 1000} s reached: the playground ends the stream`);
        handle.end(new TidegateError('ERR_TIDEGATE_PLAYGROUND_LIMIT', `playground run limit of ${this.limits.maxRunMs} ms`));
        this.paced?.abandon();
      }, this.limits.maxRunMs),
    );
    void handle.done.then((r) => this.onBridgeDone(r));
    paced.once('close', () => this.finish());
  }

  /** Ends the run now (the page's Stop, or shutdown). */
  stop(reason = 'stopped'): void {
    if (this.state === 'waiting') {
      this.outcome = { outcome: reason };
      this.finish();
      return;
    }
    if (this.outcome === null && this.state === 'running') this.outcome = { outcome: reason };
    this.handle?.end();
    this.paced?.abandon();
  }

  /** The telemetry snapshot. */
  sample(): RunSample {
    if (this.producer.stopped && this.outcome === null && !this.notes.some((n) => n.kind === 'producer-done')) {
      this.note('producer-done', `producer finished after ${this.producer.emitted} tokens`);
    }
    const held = this.held();
    const stages = this.stages();
    const bridge = this.probes.bridge;
    return {
      id: this.id,
      label: this.scenario.label,
      state: this.state,
      tMs: this.elapsed(),
      producer: { ...this.producer },
      stages,
      heldBytes: held,
      peakHeldBytes: Math.max(this.peakHeld, held, this.sharedBudget ? this.budget.peak : 0),
      budgetBytes: this.scenario.budgetBytes,
      writableLength: this.state === 'finished' ? 0 : (this.paced?.writableLength ?? 0),
      consumedBytes: this.paced?.consumedBytes ?? 0,
      bridgeEvents: bridge.delivered,
      bridgeBytes: bridge.bytes,
      avgEventBytes: bridge.delivered > 0 ? Math.round(bridge.bytes / bridge.delivered) : 0,
      overflowed: this.overflowed,
      dropped: this.dropped,
      firstOverflowMs: this.firstOverflowMs,
      notes: this.notes.slice(),
      outcome: this.outcome,
    };
  }

  private chain(): Flow<Buffer> {
    const s = this.scenario;
    const { probes } = this;
    let flow = simulatedModel(s.producerTokensPerSec, s.durationSec * 1000, this.producer).pipe(probe(probes.producer));
    if (s.limitRate !== null) flow = flow.pipe(limitRate<Buffer>(s.limitRate.highTide, s.limitRate.lowTide), probe(probes.limitRate));
    const countDiscard = onDiscard<Buffer>((v) => {
      this.discardedBytes += v.length;
    });
    switch (s.strategy) {
      case 'buffer': {
        const bounded = s.buffer.bounded;
        flow = flow.pipe(
          onBackpressureBuffer<Buffer>({
            overflow: s.buffer.overflow,
            maxBytes: bounded ? s.budgetBytes : undefined,
            budget: bounded ? this.budget : undefined,
            onOverflow: () => this.onOverflow(),
            onBufferChange: (bytes) => this.onBufferChange(bytes),
          }),
          countDiscard,
        );
        break;
      }
      case 'drop':
        flow = flow.pipe(
          onBackpressureDrop<Buffer>(() => {
            this.dropped++;
            if (this.dropped === 1) this.note('drop', 'onBackpressureDrop: first element dropped (the bridge had no demand)');
          }),
        );
        break;
      case 'latest':
        flow = flow.pipe(
          onBackpressureLatest<Buffer>(),
          onDiscard<Buffer>((v) => {
            this.discardedBytes += v.length;
            this.dropped++;
            if (this.dropped === 1) this.note('drop', 'onBackpressureLatest: first element replaced by a newer one');
          }),
        );
        break;
      case 'none':
        break;
    }
    return flow.pipe(probe(probes.bridge));
  }

  private stages(): StageSample[] {
    const s = this.scenario;
    const { probes } = this;
    const strategyOutput = probes.bridge;
    const out: StageSample[] = [];
    const producerOut = s.limitRate === null && s.strategy === 'none' ? probes.bridge : probes.producer;
    out.push({ name: 'producer (simulated model)', outstanding: outstanding(producerOut), bufferedBytes: 0, maxBytes: null });
    let upstreamBytes = producerOut.bytes;
    if (s.limitRate !== null) {
      const lrOut = s.strategy === 'none' ? probes.bridge : probes.limitRate;
      const low = s.limitRate.lowTide === undefined ? '' : `, ${s.limitRate.lowTide}`;
      out.push({
        name: `limitRate(${s.limitRate.highTide}${low})`,
        outstanding: outstanding(lrOut),
        bufferedBytes: Math.max(0, producerOut.bytes - lrOut.bytes),
        maxBytes: null,
      });
      upstreamBytes = lrOut.bytes;
    }
    if (s.strategy === 'buffer') {
      const b = s.buffer;
      out.push({
        name: `onBackpressureBuffer(${b.bounded ? `budget, '${b.overflow}'` : `unbounded, demo cap ${formatMiB(this.limits.unboundedCapBytes)}`})`,
        outstanding: outstanding(strategyOutput),
        bufferedBytes: this.bufferBytes,
        maxBytes: b.bounded ? s.budgetBytes : null,
      });
    } else if (s.strategy === 'latest') {
      out.push({
        name: 'onBackpressureLatest()',
        outstanding: outstanding(strategyOutput),
        bufferedBytes: Math.max(0, upstreamBytes - strategyOutput.bytes - this.discardedBytes),
        maxBytes: null,
      });
    } else if (s.strategy === 'drop') {
      out.push({ name: 'onBackpressureDrop()', outstanding: outstanding(strategyOutput), bufferedBytes: 0, maxBytes: null });
    }
    out.push({ name: 'demand bridge + res.writableLength', bufferedBytes: this.bridgeHeld(), maxBytes: s.budgetBytes });
    return out;
  }

  /** Bytes the bridge holds (unsent elements + `writableLength`), as counted in its budget. */
  private bridgeHeld(): number {
    if (this.state === 'waiting' || this.state === 'finished') return 0;
    return Math.max(0, this.budget.used - (this.sharedBudget ? this.bufferBytes : 0));
  }

  private held(): number {
    let sum = 0;
    for (const st of this.stages()) sum += st.bufferedBytes;
    return sum;
  }

  private onBufferChange(bytes: number): void {
    this.bufferBytes = bytes;
    const held = this.held();
    if (held > this.peakHeld) this.peakHeld = held;
    if (!this.scenario.buffer.bounded && bytes > this.limits.unboundedCapBytes && this.outcome === null && this.handle) {
      const handle = this.handle;
      this.outcome = { outcome: 'demo-cap', code: 'ERR_TIDEGATE_PLAYGROUND_CAP', message: 'unbounded buffer reached the demo cap' };
      this.note(
        'cap',
        `unbounded buffer passed the playground's demo cap of ${formatMiB(this.limits.unboundedCapBytes)}; a real one keeps growing until the heap runs out`,
      );
      queueMicrotask(() => {
        handle.end(new TidegateError('ERR_TIDEGATE_PLAYGROUND_CAP', 'unbounded buffer reached the playground demo cap'));
        this.paced?.abandon();
      });
    }
  }

  private onOverflow(): void {
    this.overflowed++;
    if (this.firstOverflowMs === null) {
      this.firstOverflowMs = this.elapsed();
      const o = this.scenario.buffer.overflow;
      const what =
        o === 'terminate'
          ? 'upstream cancelled, backlog discarded, stream terminated'
          : o === 'error'
            ? 'upstream cancelled; the backlog is delivered first, then the error (Reactor ERROR)'
            : o === 'drop-latest'
              ? 'incoming elements are dropped while full'
              : 'oldest elements are evicted while full';
      this.note('overflow', `budget of ${this.scenario.budgetBytes} bytes spent ('${o}'): ${what}`);
    }
  }

  private onBridgeDone(r: StreamResult): void {
    if (this.outcome === null) {
      this.outcome =
        r.error === undefined ? { outcome: r.outcome } : { outcome: r.outcome, ...errorBody(r.error) };
    }
    this.note('outcome', `stream ended: ${this.outcome.outcome}${this.outcome.code ? ` (${this.outcome.code})` : ''}`);
    if (this.state === 'running') this.state = 'draining';
    // A stalled client would read the tail only when it reads again: give up on it at once.
    if (this.scenario.consumerBytesPerSec === 0 || r.outcome === 'stalled') this.paced?.abandon();
    else if (this.state !== 'finished') this.timers.push(setTimeout(() => this.paced?.abandon(), this.limits.drainDeadlineMs));
  }

  private finish(): void {
    if (this.state === 'finished') return;
    this.state = 'finished';
    this.finishedAt = this.elapsed();
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    const callbacks = this.finishedCallbacks.splice(0);
    for (const cb of callbacks) cb();
  }

  private elapsed(): number {
    if (this.startedAt === 0) return 0;
    if (this.state === 'finished') return this.finishedAt || Math.round(performance.now() - this.startedAt);
    return Math.round(performance.now() - this.startedAt);
  }

  private note(kind: RunNote['kind'], message: string): void {
    if (this.notes.length < MAX_NOTES) this.notes.push({ tMs: this.elapsed(), kind, message });
  }
}

function formatMiB(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
}

function describe(s: Scenario): string {
  const parts = [`producer ${s.producerTokensPerSec} tokens/s`];
  if (s.limitRate) parts.push(`limitRate(${s.limitRate.highTide}${s.limitRate.lowTide === undefined ? '' : `, ${s.limitRate.lowTide}`})`);
  if (s.strategy === 'buffer') parts.push(`onBackpressureBuffer(${s.buffer.bounded ? `${s.budgetBytes} B, '${s.buffer.overflow}'` : 'unbounded'})`);
  else if (s.strategy !== 'none') parts.push(s.strategy === 'drop' ? 'onBackpressureDrop()' : 'onBackpressureLatest()');
  parts.push(`bridge budget ${s.budgetBytes} B`, s.consumerBytesPerSec === 0 ? 'client stalled' : `client reads ${s.consumerBytesPerSec} B/s`);
  return parts.join(' → ');
}
