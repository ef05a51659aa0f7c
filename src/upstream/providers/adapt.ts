import type { FlowOperator } from '../../flow/flow';
import { OperatorSubscriber, operator } from '../../flow/operators/operator-subscriber';
import type { FlowContext, Subscriber } from '../../flow/types';
import type { SseEvent } from '../../sse';
import { UpstreamTruncatedError } from '../errors';
import type { GatewayEvent, ProviderAdapter } from './types';

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
  return operator<SseEvent, GatewayEvent>((actual, context) => new AdaptSubscriber(actual, context, adapter));
}

/** How long the upstream may take to close after its terminator before it is cancelled, ms. */
const DRAIN_AFTER_DONE_MS = 1000;

class AdaptSubscriber extends OperatorSubscriber<SseEvent, GatewayEvent> {
  private readonly decode: (event: SseEvent) => GatewayEvent;
  private sawDone = false;
  private drainTimer: NodeJS.Timeout | undefined;

  constructor(
    actual: Subscriber<GatewayEvent>,
    context: FlowContext,
    private readonly adapter: ProviderAdapter,
  ) {
    super(actual, context);
    this.decode = adapter.decoder();
  }

  onNext(value: SseEvent): void {
    if (this.done) return; // after the terminator: drained and dropped
    let event: GatewayEvent;
    try {
      event = this.decode(value);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (event.type === 'error') {
      this.fail(event.error);
      return;
    }
    this.actual.onNext(event);
    if (event.type === 'done' && !this.done && !this.cancelled) {
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
