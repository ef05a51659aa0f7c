import type { ServerResponse } from 'node:http';
import type { FlowOperator } from '../flow/flow';
import { map } from '../flow/operators/map';
import { SseFrame, type SseEventInit } from '../sse';
import type { Scrubber } from '../http/redact';
import { UpstreamHttpError } from '../http/errors';
import type { GatewayEvent, ProviderAdapter } from './types';

/**
 * Replaces the scrubber's secrets in every event's wire before it reaches a client: a byte
 * relay's frame (whole events, so a secret is never split across two frames) is scanned with
 * one `Buffer#indexOf` per secret and copied only when one is found; an event relay's `data`,
 * `event` and `id` with `String#includes`. Apply it only when `scrubber.active` (else it costs
 * a function call per event for nothing).
 *
 * Demand: passes requests and cancel through untouched (one event in, one out).
 */
export function scrubEvents(scrubber: Scrubber): FlowOperator<GatewayEvent, GatewayEvent> {
  return map((e: GatewayEvent): GatewayEvent => {
    if (e.type === 'frames') {
      const bytes = scrubber.buffer(e.wire.bytes);
      return bytes === e.wire.bytes ? e : { ...e, wire: new SseFrame(bytes) };
    }
    const wire = scrubWire(e.wire, scrubber);
    return wire === e.wire ? e : ({ ...e, wire } as GatewayEvent);
  });
}

/** `wire` itself when it holds no secret, else a copy with each replaced. */
function scrubWire(wire: SseEventInit, scrubber: Scrubber): SseEventInit {
  const data = wire.data === undefined ? undefined : scrubber.string(wire.data);
  const event = wire.event === undefined ? undefined : scrubber.string(wire.event);
  const id = wire.id === undefined ? undefined : scrubber.string(wire.id);
  if (data === wire.data && event === wire.event && id === wire.id) return wire;
  return { ...wire, data, event, id };
}

/**
 * `adapter` whose client-facing errors (`formatError`'s SSE frame, `sendHttpError`'s JSON) have
 * the scrubber's secrets replaced: an upstream's mid-stream error message, or a network error,
 * may echo a credential or the upstream URL. The error is copied (same class and fields) with a
 * scrubbed `message` before the adapter formats it; the frame's fields are scrubbed after.
 */
export function scrubbingAdapter(adapter: ProviderAdapter, scrubber: Scrubber): ProviderAdapter {
  if (!scrubber.active) return adapter;
  return {
    ...adapter,
    formatError(error: unknown): SseEventInit | SseFrame {
      const wire = adapter.formatError(scrubError(error, scrubber));
      if (!(wire instanceof SseFrame)) return scrubWire(wire, scrubber);
      const bytes = scrubber.buffer(wire.bytes);
      return bytes === wire.bytes ? wire : new SseFrame(bytes);
    },
    sendHttpError(res: ServerResponse, error: unknown): void {
      adapter.sendHttpError(res, scrubError(error, scrubber));
    },
  };
}

/**
 * `error` itself when its message (and an {@link UpstreamHttpError}'s body, which an adapter may
 * read its error from) holds no secret, else a copy (same prototype and own fields) with them
 * scrubbed.
 */
export function scrubError(error: unknown, scrubber: Scrubber): unknown {
  if (!(error instanceof Error)) return typeof error === 'string' ? scrubber.string(error) : error;
  const message = scrubber.string(error.message);
  const body = error instanceof UpstreamHttpError ? scrubber.json(error.body) : undefined;
  if (message === error.message && (body === undefined || body === (error as UpstreamHttpError).body)) return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object, Object.getOwnPropertyDescriptors(error)) as Error;
  Object.defineProperty(copy, 'message', { value: message, writable: true, configurable: true, enumerable: false });
  if (body !== undefined) Object.defineProperty(copy, 'body', { value: body, writable: true, configurable: true, enumerable: true });
  return copy;
}
