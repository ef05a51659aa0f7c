import type { Request } from 'express';
import type { BridgeElement } from '../../express/send-flow';
import type { ByteBudget } from '../../flow/budget';
import type { Flow } from '../../flow/flow';
import { limitRate } from '../../flow/operators/limit-rate';
import { map } from '../../flow/operators/map';
import { onBackpressureBuffer } from '../../flow/operators/on-backpressure-buffer';
import { OperatorSubscriber, operator } from '../../flow/operators/operator-subscriber';
import type { FlowContext, Subscriber } from '../../flow/types';
import { SseFrame } from '../../sse';
import { scrubEvents } from '../../providers/scrub';
import type { GatewayEvent, TokenUsage } from '../../providers/types';
import type { Scrubber } from '../../http/redact';
import type { ResolvedRoute } from '../config';

/** What a user-written policy receives besides the events. */
export interface PolicyContext {
  readonly streamId: string;
  /**
   * The route as configured. It holds the upstream `apiKey`: do not log it whole. Its
   * `policy.relay` is the configured value; a route with a policy function always runs the event relay.
   */
  readonly route: ResolvedRoute;
  /** The stream's byte budget, shared with the bridge: give it to `onBackpressureBuffer({ budget })`. */
  readonly budget: ByteBudget;
  readonly req: Request;
}

/**
 * A user-written operator chain for one route, applied to the decoded events after the
 * configured `limitRate` and before the configured overflow buffer. It must keep each event's
 * `wire` valid for the provider's protocol (filter, delay, annotate; never rewrite `wire.data`
 * into another format).
 */
export type StreamPolicyFn = (events: Flow<GatewayEvent>, context: PolicyContext) => Flow<GatewayEvent>;

/** What {@link policyChain} needs of the stream. */
export interface ChainOptions {
  /** The upstream credentials, replaced in every event before the client sees it. */
  scrubber: Scrubber;
  route: ResolvedRoute;
  budget: ByteBudget;
  policy: StreamPolicyFn | undefined;
  req: Request;
  streamId: string;
  /** Filled with the usage the provider reports. */
  usage: TokenUsage;
  /** Called once, at the first token. */
  onFirstToken(): void;
}

/**
 * The route's policy operators between the provider adapter and the bridge: usage/ttft tap →
 * credential scrub → `limitRate` → user policy → overflow buffer (`terminate` only) → the provider's wire frames.
 */
export function policyChain(adapted: Flow<GatewayEvent>, o: ChainOptions): Flow<BridgeElement> {
  const { policy } = o.route;
  if (!o.scrubber.active && policy.limitRate <= 0 && o.policy === undefined && policy.overflow !== 'terminate') {
    // Nothing between the tap and the wire frames: one operator does both (one subscriber less per stream).
    return adapted.pipe(operator<GatewayEvent, BridgeElement>((actual, context) => new ObserveWireSubscriber(actual, context, o)));
  }
  let events: Flow<GatewayEvent> = adapted.pipe(operator<GatewayEvent, GatewayEvent>((actual, context) => new ObserveSubscriber(actual, context, o)));
  if (o.scrubber.active) events = events.pipe(scrubEvents(o.scrubber));
  if (o.route.policy.limitRate > 0) events = events.pipe(limitRate<GatewayEvent>(o.route.policy.limitRate));
  if (o.policy) events = o.policy(events, { streamId: o.streamId, route: o.route, budget: o.budget, req: o.req });
  if (o.route.policy.overflow === 'terminate') {
    events = events.pipe(onBackpressureBuffer<GatewayEvent>({ budget: o.budget, overflow: 'terminate', sizeOf: wireBytes }));
  }
  return events.pipe(map((e: GatewayEvent): BridgeElement => e.wire));
}

/** Records the first token's time and the usage the provider reported (see {@link observe}). */
class ObserveSubscriber extends OperatorSubscriber<GatewayEvent, GatewayEvent> {
  private seenToken = false;

  constructor(
    actual: Subscriber<GatewayEvent>,
    context: FlowContext,
    private readonly o: ChainOptions,
  ) {
    super(actual, context);
  }

  onNext(e: GatewayEvent): void {
    if (observe(e, this.o, this.seenToken)) this.seenToken = true;
    this.actual.onNext(e);
  }
}

/** {@link ObserveSubscriber} and the wire frames in one: for a chain with nothing between them. */
class ObserveWireSubscriber extends OperatorSubscriber<GatewayEvent, BridgeElement> {
  private seenToken = false;

  constructor(
    actual: Subscriber<BridgeElement>,
    context: FlowContext,
    private readonly o: ChainOptions,
  ) {
    super(actual, context);
  }

  onNext(e: GatewayEvent): void {
    if (observe(e, this.o, this.seenToken)) this.seenToken = true;
    this.actual.onNext(e.wire);
  }
}

/** Records the usage `e` reports and, at the first token (`seenToken` false), its time; true when `e` holds a token. */
function observe(e: GatewayEvent, o: ChainOptions, seenToken: boolean): boolean {
  const token = e.type === 'delta' || (e.type === 'frames' && e.delta);
  if (token && !seenToken) o.onFirstToken();
  const u = e.type === 'usage' || e.type === 'delta' || e.type === 'frames' || e.type === 'done' ? e.usage : undefined;
  if (u) {
    if (u.inputTokens !== undefined) o.usage.inputTokens = u.inputTokens;
    if (u.outputTokens !== undefined) o.usage.outputTokens = u.outputTokens;
  }
  return token === true;
}

/** Encoded size of an event's wire frame, bytes (close to what the bridge will write). */
function wireBytes(e: GatewayEvent): number {
  const w = e.wire;
  if (w instanceof SseFrame) return w.bytes.length;
  return Buffer.byteLength(w.data ?? '') + (w.event ? w.event.length + 8 : 0) + (w.id ? Buffer.byteLength(w.id) + 5 : 0) + 8;
}
