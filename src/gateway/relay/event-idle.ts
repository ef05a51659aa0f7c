import type { FlowOperator } from '../../flow/flow';
import { addDemand } from '../../flow/demand';
import { OperatorSubscriber, operator } from '../../flow/operators/operator-subscriber';
import { TimeoutSubscriber } from '../../flow/operators/timeout-subscriber';
import { timerScheduler } from '../../flow/timer-scheduler';
import type { FlowContext, Subscriber } from '../../flow/types';
import type { SseFrame } from '../../sse';

/**
 * A streaming relay's upstream idle deadline (`timeouts.idleMs`): from the first body byte on,
 * the upstream must complete an event within `ms` of the previous one. Only the time the relay
 * waits on the upstream counts: while events are asked for and the body is asked for bytes (a
 * client that stops reading, or a full budget, pauses the clock; it runs on with what was left
 * once the relay reads again). Comments (an upstream's `: keep-alive`), blank lines and
 * `retry:`-only blocks are bytes but not events: they do not move the deadline, so an upstream
 * that keeps its connection alive while its model produces nothing still ends with
 * `TimeoutError('idle', ms)`.
 *
 * Two operators share one deadline: {@link EventIdle.bytes} on the upstream body (its first
 * chunk starts the clock, before it the first-byte deadline rules; it sees what the body is
 * asked for) and {@link EventIdle.events} after the frame cutter or the parser, whose elements
 * are timed.
 */
export class EventIdle {
  /** Set by the first body chunk. */
  started = false;
  /** Chunks the body is asked for and has not sent yet. */
  bodyAsked = 0;
  private deadline: EventIdleSubscriber<unknown> | undefined;

  /**
   * @param ms the longest wait for an event, ms (> 0).
   * @param isEvent whether an element holds an event (default: every element does).
   */
  constructor(
    readonly ms: number,
    readonly isEvent?: (value: unknown) => boolean,
  ) {}

  /** Passes the body through, watching what it is asked for; its first chunk starts the deadline. */
  bytes<T>(): FlowOperator<T, T> {
    return operator<T, T>((actual, context) => new BodySubscriber<T>(actual, context, this));
  }

  /** Passes events (or frames) through, failing with `TimeoutError('idle', ms)` when none completes in time. */
  events<T>(): FlowOperator<T, T> {
    return operator<T, T>((actual, context) => {
      const s = new EventIdleSubscriber<T>(actual, context, this);
      this.deadline = s as EventIdleSubscriber<unknown>;
      return s;
    });
  }

  /** @internal The body was asked for chunks, or sent one: the clock may start or stop. */
  update(): void {
    this.deadline?.update();
  }
}

/**
 * Whether a byte relay's frame holds an event: a line whose field name is exactly `data`
 * (followed by `:`, the line's end, or nothing), as the SSE parser would dispatch. `database:`
 * or `dataless:` lines are unknown fields, ignored by a client: no event.
 */
export function frameHasEvent(frame: unknown): boolean {
  const bytes = (frame as SseFrame).bytes;
  if (isDataField(bytes, 0)) return true;
  for (let at = bytes.indexOf(DATA_LINE); at !== -1; at = bytes.indexOf(DATA_LINE, at + 1)) {
    if (isDataField(bytes, at + 1)) return true;
  }
  return false;
}

const DATA_LINE = Buffer.from('\ndata');

/** Whether the line at `at` starts with the field name `data` and nothing more before `:` or its end. */
function isDataField(bytes: Uint8Array, at: number): boolean {
  if (bytes[at] !== 0x64 || bytes[at + 1] !== 0x61 || bytes[at + 2] !== 0x74 || bytes[at + 3] !== 0x61) return false;
  const next = bytes[at + 4];
  return next === undefined || next === 0x3a || next === 0x0a || next === 0x0d;
}

class BodySubscriber<T> extends OperatorSubscriber<T, T> {
  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly idle: EventIdle,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    const idle = this.idle;
    idle.started = true;
    if (idle.bodyAsked !== Infinity && idle.bodyAsked > 0) idle.bodyAsked--;
    idle.update();
    this.actual.onNext(value);
  }

  override request(n: number): void {
    this.idle.bodyAsked = addDemand(this.idle.bodyAsked, n);
    this.idle.update();
    this.upstream.request(n);
  }
}

/**
 * A pause of the clock shorter than this counts as waiting, ms: between a read and the next
 * request the relay hands the read on (frames, writes) within a turn or two, and an upstream
 * that floods its socket with comments keeps the relay in such pauses nearly all the time. A
 * client or a budget holding the relay pauses it for longer.
 */
const SHORT_PAUSE_MS = 20;

class EventIdleSubscriber<T> extends TimeoutSubscriber<T> {
  // The upstream's bytes may be in its socket when a late timer fires: read them before judging.
  protected override readonly pollBeforeFailing = true;
  private outstanding = 0;
  /** What is left of the wait for the next event while a pause holds the clock (armed again when the relay waits), ms. */
  private remaining: number;
  /** When the relay stopped waiting on the upstream (scheduler time, ms); `NaN` while it waits. */
  private pausedAt = Number.NaN;

  constructor(
    actual: Subscriber<T>,
    context: FlowContext,
    private readonly idle: EventIdle,
  ) {
    super(actual, context, 'idle', idle.ms, timerScheduler);
    this.remaining = idle.ms;
  }

  /**
   * Runs the clock while the relay waits on the upstream. A pause is settled when the relay
   * waits again: a long one ({@link SHORT_PAUSE_MS} or more) moves the deadline on by its
   * length, a short one counts as waiting. A deadline that passes during a pause holds what
   * was left when the pause began ({@link holdsAtDeadline}).
   */
  update(): void {
    const waiting = this.outstanding > 0 && this.idle.started && this.idle.bodyAsked > 0;
    const paused = !Number.isNaN(this.pausedAt);
    if (!waiting) {
      if (!paused) this.pausedAt = timerScheduler.now();
      return;
    }
    if (!this.armed) {
      this.pausedAt = Number.NaN;
      this.arm(this.remaining);
      return;
    }
    if (!paused) return;
    const pausedFor = timerScheduler.now() - this.pausedAt;
    this.pausedAt = Number.NaN;
    if (pausedFor >= SHORT_PAUSE_MS) this.arm(Math.max(0, this.left()) + pausedFor);
  }

  protected override holdsAtDeadline(): boolean {
    if (Number.isNaN(this.pausedAt)) return false;
    // Paused since before the deadline: what was left when the pause began waits for the relay.
    this.remaining = Math.max(0, this.left() + (timerScheduler.now() - this.pausedAt));
    this.disarm();
    return true;
  }

  onNext(value: T): void {
    if (this.done) {
      this.discard(value);
      return;
    }
    const isEvent = this.idle.isEvent;
    if (isEvent === undefined || isEvent(value)) {
      this.remaining = this.timeoutMs;
      // A pause in progress counts from the event on (a disarmed clock restarts whole anyway).
      if (this.armed) {
        const now = this.arm();
        if (!Number.isNaN(this.pausedAt)) this.pausedAt = now;
      }
    }
    if (this.outstanding !== Infinity && this.outstanding > 0) this.outstanding--;
    this.update();
    this.actual.onNext(value);
  }

  override request(n: number): void {
    this.outstanding = addDemand(this.outstanding, n);
    this.update();
    this.upstream.request(n);
  }
}
