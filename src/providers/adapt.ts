import type { FlowOperator } from '../flow/flow';
import { OperatorSubscriber, operator } from '../flow/operators/operator-subscriber';
import type { FlowContext, Subscriber } from '../flow/types';
import { createSseParser, SseFrame, type SseEvent, type SseParser } from '../sse';
import { UpstreamTruncatedError } from '../http/errors';
import type { GatewayEvent, ProviderAdapter, TokenUsage } from './types';

/**
 * Decodes upstream SSE events with `adapter` into {@link GatewayEvent}s and applies the
 * provider's end rules: a `done` event is emitted, then the sequence completes and the upstream
 * is cancelled (nothing after the terminator is read); an `error` event cancels the upstream and
 * signals its error (not emitted); completion without `done`, when the adapter requires a
 * terminator, signals {@link UpstreamTruncatedError} (`ERR_TIDEGATE_UPSTREAM_TRUNCATED`).
 *
 * Demand: passes requests and cancel through untouched (one event in, at most one out).
 * Discard: nothing held.
 *
 * @example
 * body.pipe(sseDecode(), adaptProvider(openaiAdapter));
 */
export function adaptProvider(adapter: ProviderAdapter): FlowOperator<SseEvent, GatewayEvent> {
  return operator<SseEvent, GatewayEvent>((actual, context) => new AdaptSubscriber(actual, context, adapter, eventStep(adapter)));
}

/**
 * The byte relay's {@link adaptProvider}: the same end rules, on {@link SseFrame}s (from
 * `sseFrames`). A frame the adapter's `needsDecode` passes over, once the first text has been
 * seen, goes on as one `frames` event carrying its own bytes, never decoded. Any other frame is
 * split into its blocks and each is decoded with the adapter: the blocks before a terminator
 * or an error go on as one `frames` event (the terminator's block included, or the adapter's
 * `terminatorFrame` in its place; nothing after it), an error then ends the sequence as
 * in {@link adaptProvider}.
 *
 * Demand: passes requests and cancel through untouched (one frame in, at most one out).
 * Discard: nothing held.
 *
 * @example
 * body.pipe(sseFrames(), adaptFrames(openaiAdapter));
 */
export function adaptFrames(adapter: ProviderAdapter): FlowOperator<SseFrame, GatewayEvent> {
  return operator<SseFrame, GatewayEvent>((actual, context) => new AdaptSubscriber(actual, context, adapter, frameStep(adapter)));
}

/** What one input makes: an event to emit (or none), then optionally the end of the sequence. */
interface Step {
  out?: GatewayEvent;
  end?: 'done' | { error: unknown };
}

/** A stream's decode step: one event → one GatewayEvent. */
function eventStep(adapter: ProviderAdapter): (value: SseEvent) => Step {
  const decode = adapter.decoder();
  return (value) => {
    const event = decode(value);
    if (event.type === 'error') return { end: { error: event.error } };
    return event.type === 'done' ? { out: event, end: 'done' } : { out: event };
  };
}

const BLANK = Buffer.from('\n\n');

/** A stream's frame step: relayed as bytes, or split into blocks and decoded (see {@link adaptFrames}). */
function frameStep(adapter: ProviderAdapter): (frame: SseFrame) => Step {
  const decode = adapter.decoder();
  let parsed: SseEvent | undefined;
  // Made here, not inside the step: a closure made there would keep that step's context (its
  // frame's bytes) alive for as long as the stream, about 0.5 KB per stream.
  const onEvent = (e: SseEvent): void => {
    parsed = e;
  };
  // Made on the first frame that needs it (most streams after the first text never do). Frames
  // hold whole blocks within the splitter's limits: one event at most per block fed.
  let parser: SseParser | undefined;
  let sawText = false;
  return (frame) => {
    if (sawText && adapter.needsDecode !== undefined && !adapter.needsDecode(frame.bytes)) return { out: { type: 'frames', wire: frame, delta: false } };
    const bytes = frame.bytes;
    let usage: TokenUsage | undefined;
    let delta = false;
    let pos = 0;
    const upTo = (end: number): GatewayEvent | undefined => {
      if (end === 0) return undefined;
      const wire = end === bytes.length ? frame : new SseFrame(bytes.subarray(0, end));
      return usage === undefined ? { type: 'frames', wire, delta } : { type: 'frames', wire, delta, usage };
    };
    while (pos < bytes.length) {
      const at = bytes.indexOf(BLANK, pos);
      const end = at === -1 ? bytes.length : at + 2;
      parsed = undefined;
      parser ??= createSseParser({ onEvent, maxLineBytes: Infinity, maxEventBytes: Infinity });
      parser.feed(bytes.subarray(pos, end));
      const start = pos;
      pos = end;
      if (parsed === undefined) continue;
      const block = parsed;
      const event = decode(block);
      parsed = undefined; // not held until the next frame that needs decoding (the last one may be the last of the stream)
      if (event.type === 'error') return { out: upTo(start), end: { error: event.error } };
      if (event.type === 'delta') delta = sawText = true;
      if ((event.type === 'delta' || event.type === 'usage') && event.usage !== undefined) usage = { ...usage, ...definedOnly(event.usage) };
      if (event.type === 'done') {
        if (event.usage !== undefined) usage = { ...usage, ...definedOnly(event.usage) };
        const canonical = adapter.terminatorFrame?.(block);
        if (canonical === undefined) return { out: upTo(end), end: 'done' };
        const wire = new SseFrame(start === 0 ? canonical : Buffer.concat([bytes.subarray(0, start), canonical]));
        return { out: usage === undefined ? { type: 'frames', wire, delta } : { type: 'frames', wire, delta, usage }, end: 'done' };
      }
    }
    return { out: upTo(bytes.length) };
  };
}

function definedOnly(u: TokenUsage): TokenUsage {
  const out: TokenUsage = {};
  if (u.inputTokens !== undefined) out.inputTokens = u.inputTokens;
  if (u.outputTokens !== undefined) out.outputTokens = u.outputTokens;
  if (u.totalTokens !== undefined) out.totalTokens = u.totalTokens;
  return out;
}

/** How long the upstream may take to close after its terminator before it is cancelled, ms. */
const DRAIN_AFTER_DONE_MS = 1000;

class AdaptSubscriber<T> extends OperatorSubscriber<T, GatewayEvent> {
  private sawDone = false;
  private drainTimer: NodeJS.Timeout | undefined;

  constructor(
    actual: Subscriber<GatewayEvent>,
    context: FlowContext,
    private readonly adapter: ProviderAdapter,
    private readonly step: (value: T) => Step,
  ) {
    super(actual, context);
  }

  onNext(value: T): void {
    if (this.done) return; // after the terminator: drained and dropped
    let step: Step;
    try {
      step = this.step(value);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (step.out !== undefined) this.actual.onNext(step.out);
    else if (step.end === undefined) this.upstream.request(1); // nothing to emit: the demand is still unmet
    if (typeof step.end === 'object') {
      if (!this.done && !this.cancelled) this.fail(step.end.error);
      return;
    }
    if (step.end === 'done' && !this.done && !this.cancelled) {
      this.sawDone = true;
      this.done = true;
      this.actual.onComplete();
      // Let the upstream close on its own (its keep-alive socket is reused), within a grace period.
      this.drainTimer = setTimeout(() => this.upstream.cancel(), DRAIN_AFTER_DONE_MS);
      this.drainTimer.unref();
      this.upstream.request(Infinity);
    }
  }

  override onError(error: unknown): void {
    if (this.sawDone) return this.stopDrain();
    super.onError(error);
  }

  override onComplete(): void {
    if (this.sawDone) return this.stopDrain();
    if (this.done) return;
    if (this.adapter.requiresTerminator) {
      this.onError(new UpstreamTruncatedError());
      return;
    }
    super.onComplete();
  }

  override cancel(): void {
    this.stopDrain();
    super.cancel();
  }

  private stopDrain(): void {
    if (this.drainTimer !== undefined) clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
  }
}
