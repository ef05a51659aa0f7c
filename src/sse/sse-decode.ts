import { addDemand } from '../flow/demand';
import { discardAll, reportDropped } from '../flow/discard';
import { Flow, type FlowOperator } from '../flow/flow';
import { ArrayQueue } from '../flow/queue';
import type { FlowContext, Subscriber, Subscription } from '../flow/types';
import { createSseParser, type SseEvent, type SseParser } from './parser';

/** Options for {@link sseDecode}: the parser's limits and side callbacks. */
export interface SseDecodeOptions {
  /** Largest line in bytes (default 1 MiB); see `SseParserOptions.maxLineBytes`. */
  maxLineBytes?: number;
  /** Largest event data in bytes (default 1 MiB); see `SseParserOptions.maxEventBytes`. */
  maxEventBytes?: number;
  /** Called for each valid `retry` field, with the reconnection time in ms. */
  onRetry?: (retryMs: number) => void;
  /** Called for each comment line (text after `:`, one leading space removed). */
  onComment?: (comment: string) => void;
  /**
   * Called when the stream's last event ID changes, including by an `id:`-only block that
   * dispatches no event; in stream order with the events, after every earlier event was
   * delivered, so a client resuming from it never skips an event it has not seen.
   */
  onLastEventId?: (lastEventId: string) => void;
}

/** A last-event-ID change queued in order with the events; costs no demand. */
class LastEventIdMark {
  constructor(readonly lastEventId: string) {}
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
 * events parsed from ONE chunk, so it is bounded by the chunk size: at most 1 + chunk bytes / 6
 * (an event takes at least the 6 bytes `data\n\n`; only the first may have begun earlier).
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
    new Flow<SseEvent>((actual, context) => source.subscribeWith(new SseDecodeSubscriber(actual, context, options), context));
}

class SseDecodeSubscriber implements Subscriber<Uint8Array>, Subscription {
  private upstream: Subscription | undefined;
  private readonly queue = new ArrayQueue<SseEvent | LastEventIdMark>();
  private readonly onLastEventId: ((lastEventId: string) => void) | undefined;
  private readonly parser: SseParser;
  private demand = 0;
  /** Outstanding upstream request: 0, 1 or Infinity. */
  private upstreamRequested = 0;
  private wip = 0;
  private done = false;
  private failed = false;
  private failure: unknown = undefined;
  private cancelled = false;
  private terminated = false;

  constructor(
    private readonly actual: Subscriber<SseEvent>,
    private readonly context: FlowContext,
    options: SseDecodeOptions,
  ) {
    this.onLastEventId = options.onLastEventId;
    this.parser = createSseParser({
      onEvent: (event) => this.queue.push(event),
      onLastEventId: options.onLastEventId === undefined ? undefined : (id) => this.queue.push(new LastEventIdMark(id)),
      onRetry: options.onRetry,
      onComment: options.onComment,
      maxLineBytes: options.maxLineBytes,
      maxEventBytes: options.maxEventBytes,
      onError: (error) => this.fail(error),
    });
  }

  onSubscribe(s: Subscription): void {
    this.upstream = s;
    this.actual.onSubscribe(this);
  }

  request(n: number): void {
    if (this.cancelled || this.terminated) return;
    this.demand = addDemand(this.demand, n);
    this.drain();
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.upstream?.cancel();
    this.parser.reset();
    discardAll(this.context, this.queue.drainAll().filter((e) => !(e instanceof LastEventIdMark)));
  }

  onNext(chunk: Uint8Array): void {
    if (this.done || this.cancelled) return;
    if (this.upstreamRequested === 1) this.upstreamRequested = 0;
    try {
      this.parser.feed(chunk);
    } catch (err) {
      this.fail(err); // a throwing onRetry/onComment callback
    }
    this.drain();
  }

  onError(error: unknown): void {
    if (this.done || this.cancelled) {
      if (!this.cancelled) reportDropped(error);
      return;
    }
    this.done = true;
    this.failed = true;
    this.failure = error;
    this.drain();
  }

  onComplete(): void {
    if (this.done || this.cancelled) return;
    this.parser.end();
    this.done = true;
    this.drain();
  }

  private fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.failed = true;
    this.failure = error;
    this.upstream?.cancel();
  }

  private drain(): void {
    if (this.wip++ !== 0) return;
    let missed = 1;
    for (;;) {
      while (this.queue.length > 0 && !this.cancelled) {
        if (this.queue.peek() instanceof LastEventIdMark) {
          this.onLastEventId?.((this.queue.shift() as LastEventIdMark).lastEventId);
          continue;
        }
        if (this.demand === 0) break;
        const event = this.queue.shift() as SseEvent;
        if (this.demand !== Infinity) this.demand--;
        this.actual.onNext(event);
      }
      if (this.cancelled || this.terminated) return;
      if (this.done) {
        if (this.queue.length === 0) {
          this.terminated = true;
          if (this.failed) this.actual.onError(this.failure);
          else this.actual.onComplete();
          return;
        }
      } else if (this.demand > 0 && this.queue.length === 0 && this.upstreamRequested === 0) {
        this.upstreamRequested = this.demand === Infinity ? Infinity : 1;
        this.upstream?.request(this.upstreamRequested); // may re-enter onNext synchronously
      }
      missed = this.wip -= missed;
      if (missed === 0) return;
    }
  }
}
