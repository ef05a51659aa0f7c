import { errorBody, formatError } from '../express/send-flow';
import type { SseEvent } from '../sse';
import { httpStatusOf, writeJsonError } from './errors-http';
import type { GatewayEvent, ProviderAdapter } from './types';
import { reencoder } from './wire';

/** How a generic upstream marks its end; EOF without it is then `ERR_TIDEGATE_UPSTREAM_TRUNCATED`. */
export interface PassthroughTerminator {
  /** The event type of the last event, e.g. `done`. */
  event?: string | undefined;
  /** The data of the last event, e.g. `[DONE]`. */
  data?: string | undefined;
}

/**
 * A generic SSE upstream: every event is relayed as received (`event`, `id` and `data` kept;
 * comments and `retry` dropped: the gateway sends its own heartbeats). Each event counts as a
 * `delta` whose text is its data (for time-to-first-token and event counts). Errors are
 * tidegate's `event: error` `{"code","message"}`. With a `terminator`, the matching event is
 * `done` and EOF without it is a truncation; without one, EOF is a clean end.
 */
export function createPassthroughAdapter(terminator?: PassthroughTerminator): ProviderAdapter {
  const isDone =
    terminator === undefined || (terminator.event === undefined && terminator.data === undefined)
      ? undefined
      : (e: SseEvent): boolean =>
          (terminator.event === undefined || e.type === terminator.event) && (terminator.data === undefined || e.data === terminator.data);
  // The byte relay decodes a frame only when it may hold the terminator. Data of several lines
  // is on the wire a `data:` line each: its longest line is in every frame that holds it.
  const dataNeedle = terminator?.data?.split('\n').reduce((longest, line) => (line.length > longest.length ? line : longest));
  const needles = isDone === undefined ? [] : [dataNeedle, terminator?.event].filter((v): v is string => v !== undefined).map((v) => Buffer.from(v));
  return {
    name: 'passthrough',
    requiresTerminator: isDone !== undefined,
    defaultForwardHeaders: ['content-type', 'last-event-id'],
    decoder() {
      const wireOf = reencoder();
      return (e: SseEvent): GatewayEvent => {
        const wire = wireOf(e);
        if (isDone?.(e)) return { type: 'done', wire };
        return { type: 'delta', text: e.data, wire };
      };
    },
    needsDecode(frame) {
      return needles.some((needle) => frame.indexOf(needle) !== -1);
    },
    authHeaders(apiKey): Record<string, string> {
      return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
    },
    formatError,
    sendHttpError(res, error) {
      writeJsonError(res, httpStatusOf(error), { error: errorBody(error) });
    },
  };
}

/** The passthrough adapter without a terminator. */
export const passthroughAdapter: ProviderAdapter = createPassthroughAdapter();
