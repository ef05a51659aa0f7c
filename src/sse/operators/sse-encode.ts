import { discard, reportDropped } from '../../flow/discard';
import { Flow, type FlowOperator } from '../../flow/flow';
import type { FlowContext, Subscriber, Subscription } from '../../flow/types';
import { encodeSseBuffer, type SseEventInit } from '../codec/encode';

/**
 * Encodes each event as `text/event-stream` bytes with {@link encodeSse}, one Buffer per event.
 *
 * ```
 * events: --{data:'a'}------{event:'x',data:'b'}--|
 * bytes:  --[data: a\n\n]---[event: x\ndata: b\n\n]-|
 * ```
 *
 * Demand: 1:1, requests pass straight upstream.
 * Discard: the event that failed to encode.
 * Errors: an event `encodeSse` rejects (`TypeError`: CR/LF in `id`/`event`, NUL in `id`, bad
 * `retry`) cancels upstream and signals that error.
 *
 * @example
 * events.pipe(sseEncode()).subscribe((buf) => res.write(buf));
 */
export function sseEncode(): FlowOperator<SseEventInit, Buffer> {
  return (source) =>
    new Flow<Buffer>((actual, context) => source.subscribeWith(new SseEncodeSubscriber(actual, context), context));
}

class SseEncodeSubscriber implements Subscriber<SseEventInit>, Subscription {
  private upstream: Subscription | undefined;
  private done = false;

  constructor(
    private readonly actual: Subscriber<Buffer>,
    private readonly context: FlowContext,
  ) {}

  onSubscribe(s: Subscription): void {
    this.upstream = s;
    this.actual.onSubscribe(this);
  }

  request(n: number): void {
    if (!this.done) this.upstream?.request(n);
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.upstream?.cancel();
  }

  onNext(event: SseEventInit): void {
    if (this.done) return;
    let bytes: Buffer;
    try {
      bytes = encodeSseBuffer(event);
    } catch (err) {
      this.done = true;
      this.upstream?.cancel();
      discard(this.context, event);
      this.actual.onError(err);
      return;
    }
    this.actual.onNext(bytes);
  }

  onError(error: unknown): void {
    if (this.done) {
      reportDropped(error);
      return;
    }
    this.done = true;
    this.actual.onError(error);
  }

  onComplete(): void {
    if (this.done) return;
    this.done = true;
    this.actual.onComplete();
  }
}
