import { addDemand } from '../../flow/demand';
import { discardAll, reportDropped } from '../../flow/discard';
import { ArrayQueue } from '../../flow/queue';
import type { FlowContext, Subscriber, Subscription } from '../../flow/types';

/** A streaming decoder driven by {@link ChunkDecodeSubscriber}: it pushes what it decodes synchronously. */
export interface ChunkDecoder {
  feed(chunk: Uint8Array): void;
  end(): void;
  reset(): void;
  /** Bytes held for an output not complete yet (e.g. an event still arriving). */
  bufferedBytes?(): number;
}

/**
 * A side signal of the stream (a last-event-ID change, a comment, a `retry` field) queued in
 * order with the outputs: it costs no demand and runs when the queue reaches it, after every
 * earlier output was delivered; dropped on cancel.
 */
export class SideMark {
  constructor(readonly run: () => void) {}
}

/** Builds a stream's decoder around the subscriber's `push` (queue an output or a {@link SideMark}) and `fail` (a limit error). */
export type ChunkDecoderFactory<T> = (push: (item: T | SideMark) => void, fail: (error: unknown) => void) => ChunkDecoder;

/**
 * The demand and terminal rules shared by `sseDecode` and `sseFrames`: bytes in, decoded items
 * out, one upstream chunk requested at a time while downstream demand is unmet and nothing
 * decoded is waiting (so the queue only ever holds the outputs of ONE chunk); unbounded when
 * downstream demand is. Errors (a decoder limit, upstream) are delivered after the queued items.
 */
export class ChunkDecodeSubscriber<T> implements Subscriber<Uint8Array>, Subscription {

  private upstream: Subscription | undefined;
  private readonly queue = new ArrayQueue<T | SideMark>();
  /** Bytes of the queued outputs (with an `account`). */
  private queuedBytes = 0;
  private readonly decoder: ChunkDecoder;
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
    private readonly actual: Subscriber<T>,
    private readonly context: FlowContext,
    decoder: ChunkDecoderFactory<T>,
    /** When given, `counter.bytes` is kept equal to the bytes of the queued outputs plus the decoder's incomplete one, and `counter.outputBytes` (when present) to the queued outputs' alone. */
    private readonly account?: { counter: { bytes: number; outputBytes?: number }; sizeOf: (item: T) => number },
  ) {
    this.decoder = decoder(
      account === undefined
        ? (item) => this.queue.push(item)
        : (item) => {
            if (!(item instanceof SideMark)) this.queuedBytes += account.sizeOf(item);
            this.queue.push(item);
          },
      (error) => this.fail(error),
    );
  }


  /** Publishes the queued bytes and the decoder's incomplete output to the account's counter. */
  private recount(): void {
    const account = this.account;
    if (account === undefined) return;
    account.counter.bytes = this.queuedBytes + (this.decoder.bufferedBytes?.() ?? 0);
    if (account.counter.outputBytes !== undefined) account.counter.outputBytes = this.queuedBytes;
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
    this.decoder.reset();
    this.queuedBytes = 0;
    this.recount();
    discardAll(this.context, this.queue.drainAll().filter((e) => !(e instanceof SideMark)));
  }

  onNext(chunk: Uint8Array): void {
    if (this.done || this.cancelled) return;
    if (this.upstreamRequested === 1) this.upstreamRequested = 0;
    try {
      this.decoder.feed(chunk);
    } catch (err) {
      this.fail(err); // a throwing callback of the decoder's
    }
    this.recount();
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
    this.decoder.end();
    this.recount();
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
        if (this.queue.peek() instanceof SideMark) {
          (this.queue.shift() as SideMark).run();
          continue;
        }
        if (this.demand === 0) break;
        const event = this.queue.shift() as T;
        if (this.account !== undefined) {
          this.queuedBytes -= this.account.sizeOf(event);
          this.recount();
        }
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
