import type { SseLimitError } from '../../errors';

/**
 * One dispatched server-sent event, as the WHATWG HTML "event stream interpretation"
 * (§9.2.6) builds it: `type` is the `event` field or `"message"`, `data` is the `data` lines
 * joined with LF (final LF removed), `lastEventId` is the last event ID buffer at dispatch
 * (it persists across events until an `id` field changes it).
 */
export interface SseEvent {
  /** The event type: the last `event` field value, or `"message"` when none or empty. */
  type: string;
  /** The `data` field values joined with `"\n"`. */
  data: string;
  /** The last event ID buffer at dispatch time (`""` until an `id` field sets it). */
  lastEventId: string;
}

/** Options for `createSseParser`. */
export interface SseParserOptions {
  /** Called once per dispatched event, synchronously inside `feed()`. */
  onEvent: (event: SseEvent) => void;
  /** Called with the reconnection time in ms for each `retry` field whose value is all ASCII digits. */
  onRetry?: ((retryMs: number) => void) | undefined;
  /** Called with the text of each comment line (after the `:`, one leading space removed). */
  onComment?: ((comment: string) => void) | undefined;
  /**
   * Called at a dispatch (blank line) whose last event ID buffer differs from the value last
   * reported, before that dispatch's event, and also when no event is dispatched because the data
   * is empty: §9.2.6 "dispatch the event" step 1 sets the source's last event ID string either
   * way, so an `id:`-only block still moves the `Last-Event-ID` a client resumes from.
   */
  onLastEventId?: ((lastEventId: string) => void) | undefined;
  /**
   * The last event ID buffer the stream starts with (default `""`), and returns to on `end()` /
   * `reset()`: a client that reconnects with `Last-Event-ID` passes it, so the new connection's
   * events carry it until the server sends another `id` (as browsers' EventSource keeps its
   * last event ID string across reconnects). Must not contain CR, LF or NUL.
   */
  lastEventId?: string | undefined;
  /**
   * Largest line the parser uses, in bytes, line terminator excluded. Default
   * {@link DEFAULT_MAX_LINE_BYTES} (1 MiB). A longer `data`, `event`, `id` or `retry` line
   * signals `SseLimitError` (`limit: 'line'`) as soon as its pending bytes exceed the
   * limit, before its end arrives. Lines §9.2.6 ignores are skipped whatever their length,
   * without being buffered: unknown fields (once their first bytes cannot start
   * `data:`/`event:`/`id:`/`retry:` or one of these names alone), comments when `onComment` is
   * not given, and comments longer than this limit (`onComment` is not called for those).
   */
  maxLineBytes?: number | undefined;
  /**
   * Largest event data accepted, in input bytes: the `data` values of one event plus the LFs
   * joining them. Default {@link DEFAULT_MAX_EVENT_BYTES} (1 MiB). Exceeding it signals
   * `SseLimitError` (`limit: 'event'`).
   */
  maxEventBytes?: number | undefined;
  /**
   * Receives a limit error instead of `feed()` throwing it. Either way the parser stops:
   * later `feed()`/`end()` calls are ignored until `reset()`.
   */
  onError?: ((error: SseLimitError) => void) | undefined;
}

/** A streaming event-stream parser: bytes in, callbacks out, no I/O. */
export interface SseParser {
  /**
   * Parses the next chunk of the stream. A chunk may end anywhere: inside a UTF-8 sequence, a
   * BOM, a line, or between the CR and LF of a CRLF. Callbacks run synchronously; an exception
   * thrown by a callback propagates and the rest of that chunk is not parsed. A string chunk is
   * UTF-8 encoded first (so split surrogate pairs are not rejoined: feed bytes for exactness).
   *
   * @throws {SseLimitError} when a limit is exceeded and no `onError` option was given.
   */
  feed(chunk: Uint8Array | string): void;
  /**
   * Marks the end of the stream: a pending incomplete line and an event without its final
   * blank line are discarded, never dispatched (§9.2.6). The parser is then back at its initial
   * state, ready for a new stream (BOM check and all buffers reset).
   */
  end(): void;
  /** Drops all state and a stopped (failed) state; the last event ID returns to the `lastEventId` option. */
  reset(): void;
  /**
   * Bytes the parser holds now: the incomplete line carried between chunks and the data of the
   * event being built, in input (UTF-8) bytes. What a byte budget counts of the parser.
   */
  readonly heldBytes: number;
}

/** Default {@link SseParserOptions.maxLineBytes}: 1 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
/** Default {@link SseParserOptions.maxEventBytes}: 1 MiB. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
