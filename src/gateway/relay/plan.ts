import type { Response } from 'express';
import { UPSTREAM_MAX_READ_BYTES, type UpstreamStream } from '../../http/request';
import type { ResolvedRoute } from '../config';
import { READ_SLACK_BYTES, UNSIZED_READER_BYTES } from './read-admission';
import type { ClientAsk } from './upstream-call';

/**
 * Which way one stream goes through the relay, decided from the route and the client's request
 * ({@link planStream}), then settled by the upstream's response ({@link settlePlan}):
 *
 * | kind | when | what the bridge receives |
 * |---|---|---|
 * | `whole` | the client or the route does not stream | nothing: one whole answer |
 * | `resumable` | a resumable passthrough route | events read through `connectSse` (reconnects with `Last-Event-ID`) |
 * | `bytes` | `relay: bytes`, none of a policy, `limitRate`, `resumable` or `resume`, and room in the budget | the upstream's own bytes cut into frames of whole events |
 * | `events` | otherwise | decoded events, re-encoded |
 */
export type StreamPlan = { readonly kind: 'whole' } | StreamingPlan;

/** A plan whose answer is a stream (every kind but `whole`). */
export type StreamingPlan = { readonly kind: 'resumable' } | RelayPlan;

/** A plan read from one upstream call of the gateway's own HTTP stack. */
export type RelayPlan = BytesPlan | EventsPlan;

/** The byte relay. */
export interface BytesPlan {
  readonly kind: 'bytes';
  /** Largest frame, bytes: one upstream read's complete events. */
  readonly frameBytes: number;
  /** Largest event, bytes: what passes beside the socket's buffer and the reads' slack. */
  readonly maxEventBytes: number;
}

/** The event relay. */
export interface EventsPlan {
  readonly kind: 'events';
  readonly maxEventBytes: number;
  /**
   * Set when a small byte-relay budget met an unsized reader: demand is then counted in bytes
   * (elements up to this size), so a paused stream still keeps to the small budget.
   */
  readonly maxElementBytes?: number | undefined;
}

/** Frames the bridge may request ahead in the byte relay (the reads' sizes bound the bytes). */
export const FRAME_PREFETCH = 16;
/** What re-encoding may add to an event's upstream bytes (a `data: ` prefix on an empty line, a final LF), bytes. */
const WIRE_MARGIN_BYTES = 64;
/** Below this room beside the socket's buffer and the slack, the byte relay gains little: events are relayed one by one. */
const MIN_RELAY_ROOM_BYTES = 8 * 1024;

/**
 * The way a stream goes before the upstream answered. The byte relay needs a route that neither
 * counts nor sees events (`relay: bytes`, no `limitRate`, no user policy, not resumable) and a
 * budget over the socket's high-water mark + {@link READ_SLACK_BYTES} + 8 KiB (about 30 KiB).
 */
export function planStream(route: ResolvedRoute, res: Response, ask: ClientAsk, hasPolicy: boolean): StreamPlan {
  if (!ask.streaming) return { kind: 'whole' };
  if (route.resumable && route.provider === 'passthrough') return { kind: 'resumable' };
  const room = relayRoom(route, res);
  const eventsOnly = route.policy.relay !== 'bytes' || hasPolicy || route.policy.limitRate > 0 || route.resumable || route.resume !== undefined;
  if (eventsOnly || room < MIN_RELAY_ROOM_BYTES) return { kind: 'events', maxEventBytes: route.policy.maxEventBytes };
  // An event that could not pass beside the socket's buffer and the reads' slack is refused as
  // it arrives (ERR_TIDEGATE_SSE_LIMIT): the carried block never crowds out the budget.
  return { kind: 'bytes', frameBytes: UPSTREAM_MAX_READ_BYTES, maxEventBytes: Math.min(route.policy.maxEventBytes, room) };
}

/**
 * The way a stream goes once the upstream answered. A compressed or TLS body (reads not sized)
 * takes up to {@link UNSIZED_READER_BYTES} unasked: with less room than that beside a frame
 * (a budget under about 66 KiB), its bytes could not stay inside the budget, so the stream relays
 * events instead (whose budget leaves the reader out), with demand counted in bytes.
 */
export function settlePlan(plan: RelayPlan, upstream: Pick<UpstreamStream, 'readsSized'>, route: ResolvedRoute, res: Response): RelayPlan {
  if (plan.kind !== 'bytes' || upstream.readsSized()) return plan;
  const room = relayRoom(route, res);
  if (room >= UNSIZED_READER_BYTES + MIN_RELAY_ROOM_BYTES) return plan;
  const maxEventBytes = Math.min(route.policy.maxEventBytes, room);
  // An event's wire frame is its decoded fields re-encoded: at most its upstream size and a few bytes.
  return { kind: 'events', maxEventBytes, maxElementBytes: maxEventBytes + WIRE_MARGIN_BYTES };
}

/**
 * The budget's room beside the client socket's buffer and {@link READ_SLACK_BYTES}, bytes: the
 * largest event a byte relay carries and what decides whether it can.
 */
function relayRoom(route: ResolvedRoute, res: Response): number {
  return route.policy.maxBufferedBytes - res.writableHighWaterMark - READ_SLACK_BYTES;
}
