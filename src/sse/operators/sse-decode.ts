import { Flow, type FlowOperator } from '../../flow/flow';
import { ChunkDecodeSubscriber, SideMark, type ChunkDecoderFactory } from './decode-subscriber';
import { createSseParser, type SseEvent } from '../codec/parser';

/** Options for {@link sseDecode}: the parser's limits and side callbacks. */
export interface SseDecodeOptions {
  /** Largest line in bytes (default 1 MiB); see `SseParserOptions.maxLineBytes`. */
  maxLineBytes?: number | undefined;
  /** Largest event data in bytes (default 1 MiB); see `SseParserOptions.maxEventBytes`. */
  maxEventBytes?: number | undefined;
  /**
   * Called for each valid `retry` field, with the reconnection time in ms; in stream order with
   * the events (after every earlier event was delivered), never after a cancel.
   */
  onRetry?: ((retryMs: number) => void) | undefined;
  /**
   * Called for each comment line (text after `:`, one leading space removed); in stream order
   * with the events (after every earlier event was delivered), never after a cancel.
   */
  onComment?: ((comment: string) => void) | undefined;
  /**
   * Called when the stream's last event ID changes, including by an `id:`-only block that
   * dispatches no event; in stream order with the events, after every earlier event was
   * delivered, so a client resuming from it never skips an event it has not seen.
   */
  onLastEventId?: ((lastEventId: string) => void) | undefined;
  /** The last event ID the stream starts with (default `""`); see `SseParserOptions.lastEventId`. */
  lastEventId?: string | undefined;
  /**
   * Called once per subscription with a count of the bytes its parser holds (`SseParser.heldBytes`:
   * the unfinished line and event), for a byte budget to count them (`ByteBudget.attachExternal`).
   */
  attachHeld?: ((heldBytes: () => number) => void) | undefined;
}

/**
 * Parses a byte stream (`text/event-stream`) into events with {@link createSseParser}
 * (WHATWG HTML §9.2.6): chunk boundaries may fall anywhere.
 *
 * ```
 * bytes:  --[data: a\n\nda]--[ta: b\n\n]--|
 * events: --a-----------------b----------|
 * ```
 *
 * Demand: requests upstream only while downstream demand is unmet: one chunk at a time when
 * downstream demand is positive and no parsed event is waiting (unbounded when downstream
 * demand is unbounded). Events parsed beyond demand wait in a queue that only ever holds
 * what ONE chunk produced, so it is bounded by the chunk size: at most 1 + chunk bytes / 6
 * events (an event takes at least the 6 bytes `data\n\n`; only the first may have begun
 * earlier), and the side callbacks (`onComment`, `onRetry`, `onLastEventId`) queued in order
 * with them, one per line of at least 2 bytes.
 * Discard: queued events on cancel.
 * Errors: a limit exceeded ({@link SseLimitError}, `ERR_TIDEGATE_SSE_LIMIT`) cancels upstream
 * at once; events parsed before it are still delivered as demand allows, then the error.
 * Upstream errors are likewise delivered after the queued events. On completion the parser's
 * `end()` drops an unterminated last event (§9.2.6), then completes.
 *
 * @param options parser limits (bytes) and callbacks.
 * @example
 * fromReadable(res.body).pipe(sseDecode()).subscribeWithDemand({ next: (e) => console.log(e.data) }).request(1);
 */
export function sseDecode(options: SseDecodeOptions = {}): FlowOperator<Uint8Array, SseEvent> {
  return (source) =>
    new Flow<SseEvent>((actual, context) => source.subscribeWith(new ChunkDecodeSubscriber<SseEvent>(actual, context, decoderFor(options)), context));
}

function decoderFor(options: SseDecodeOptions): ChunkDecoderFactory<SseEvent> {
  return (push, fail) => {
    const parser = createSseParser({
      onEvent: push,
      // In stream order with the events (see SideMark): a callback never runs ahead of an event parsed before it.
      onLastEventId: options.onLastEventId === undefined ? undefined : (id) => push(new SideMark(() => options.onLastEventId?.(id))),
      onRetry: options.onRetry === undefined ? undefined : (ms) => push(new SideMark(() => options.onRetry?.(ms))),
      onComment: options.onComment === undefined ? undefined : (comment) => push(new SideMark(() => options.onComment?.(comment))),
      maxLineBytes: options.maxLineBytes,
      maxEventBytes: options.maxEventBytes,
      lastEventId: options.lastEventId,
      onError: fail,
    });
    options.attachHeld?.(() => parser.heldBytes);
    return parser;
  };
}
