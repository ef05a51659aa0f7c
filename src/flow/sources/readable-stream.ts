import { addDemand } from '../demand';
import { Flow } from '../flow';
import type { Subscriber, Subscription } from '../types';

/**
 * Emits the chunks of a WHATWG `ReadableStream` (native `fetch` / undici bodies): `read()` is
 * called only while demand is positive, so the stream's queue and then the socket push back.
 *
 * Demand: one `read()` per unit of demand, never more than one read in flight.
 * Discard: nothing is held. Cancel calls `reader.cancel()`, which aborts a fetch body.
 */
export function fromReadableStream<T>(stream: ReadableStream<T>): Flow<T> {
  return new Flow<T>((actual) => {
    const reader = stream.getReader();
    actual.onSubscribe(new PullSubscription<T>(actual, () => reader.read(), () => void reader.cancel().catch(() => undefined)));
  });
}

/**
 * Emits the values of an async iterable (an async generator, a Node stream's iterator), pulling
 * `next()` only while demand is positive. Cancel calls `return()` on the iterator.
 *
 * Demand: one `next()` per unit of demand, never more than one in flight.
 * Discard: nothing is held.
 */
export function fromAsyncIterable<T>(iterable: AsyncIterable<T>): Flow<T> {
  return new Flow<T>((actual) => {
    const iterator = iterable[Symbol.asyncIterator]();
    actual.onSubscribe(
      new PullSubscription<T>(
        actual,
        () => iterator.next(),
        () => void Promise.resolve(iterator.return?.()).catch(() => undefined),
      ),
    );
  });
}

/** Pulls one promise at a time while demand is positive; shared by the async sources. */
class PullSubscription<T> implements Subscription {
  private demand = 0;
  private pulling = false;
  private finished = false;

  constructor(
    private readonly actual: Subscriber<T>,
    private readonly pull: () => Promise<IteratorResult<T> | ReadableStreamReadResult<T>>,
    private readonly release: () => void,
  ) {}

  request(n: number): void {
    if (this.finished) return;
    this.demand = addDemand(this.demand, n);
    this.loop();
  }

  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    this.release();
  }

  private loop(): void {
    if (this.pulling || this.finished || this.demand === 0) return;
    this.pulling = true;
    let result: Promise<IteratorResult<T> | ReadableStreamReadResult<T>>;
    try {
      result = this.pull();
    } catch (err) {
      this.pulling = false;
      this.finished = true;
      this.actual.onError(err);
      return;
    }
    result.then(
      (r) => {
        this.pulling = false;
        if (this.finished) return;
        if (r.done) {
          this.finished = true;
          this.actual.onComplete();
          return;
        }
        if (this.demand !== Infinity) this.demand--;
        this.actual.onNext(r.value as T);
        this.loop();
      },
      (err: unknown) => {
        this.pulling = false;
        if (this.finished) return;
        this.finished = true;
        this.actual.onError(err);
      },
    );
  }
}
