import { Subject, type OperatorFunction, type Subscription as RxSubscription } from 'rxjs';
import { addDemand } from './demand';
import { Flow } from './flow';
import type { Subscriber, Subscription } from './types';

/**
 * Runs a synchronous RxJS operator inside a Flow without breaking demand: requests pass
 * straight up; an input that produced no output is replenished with `request(1)` (Reactor's
 * `filter` does the same). An output with no demand for it signals a `TypeError` (the operator
 * emitted more than one value per input, or asynchronously), never an unbounded buffer.
 */
export function liftRx<A, B>(source: Flow<A>, op: OperatorFunction<A, B>): Flow<B> {
  return new Flow<B>((actual, context) => source.subscribeWith(new LiftRxSubscriber(actual, op), context));
}

class LiftRxSubscriber<A, B> implements Subscriber<A>, Subscription {
  private upstream: Subscription | undefined;
  private readonly input = new Subject<A>();
  private output: RxSubscription | undefined;
  private requested = 0;
  private produced = 0;
  private done = false;
  /** Demand requested before the operator subscribed to `input`: sent upstream once it has. */
  private deferred = 0;
  private ready = false;

  constructor(
    private readonly actual: Subscriber<B>,
    private readonly op: OperatorFunction<A, B>,
  ) {}

  onSubscribe(s: Subscription): void {
    this.upstream = s;
    this.actual.onSubscribe(this);
    if (this.done) return;
    this.output = this.op(this.input).subscribe({
      next: (v) => this.emit(v),
      error: (e) => this.terminate(e, true),
      complete: () => this.terminate(undefined, false),
    });
    // A request made inside the downstream onSubscribe waits until here: a synchronous source
    // would otherwise emit into the Subject before the operator listens, losing every element.
    this.ready = true;
    const n = this.deferred;
    this.deferred = 0;
    if (n > 0 && !this.done) this.upstream.request(n);
  }

  request(n: number): void {
    if (this.done) return;
    this.requested = addDemand(this.requested, n);
    if (this.ready) this.upstream?.request(n);
    else this.deferred = addDemand(this.deferred, n);
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.output?.unsubscribe();
    this.upstream?.cancel();
  }

  onNext(value: A): void {
    if (this.done) return;
    this.produced = 0;
    this.input.next(value);
    if (this.produced === 0 && !this.done && this.requested !== Infinity) this.upstream?.request(1);
  }

  onError(error: unknown): void {
    if (!this.done) this.input.error(error);
  }

  onComplete(): void {
    if (!this.done) this.input.complete();
  }

  private emit(value: B): void {
    if (this.done) return;
    if (this.requested === 0) {
      this.terminate(
        new TypeError('a lifted RxJS operator emitted without demand: use operators with at most one synchronous output per input'),
        true,
      );
      return;
    }
    if (this.requested !== Infinity) this.requested--;
    this.produced++;
    this.actual.onNext(value);
  }

  private terminate(error: unknown, failed: boolean): void {
    if (this.done) return;
    this.done = true;
    this.upstream?.cancel(); // harmless after an upstream terminal; stops it on an early end (take, first)
    if (failed) this.actual.onError(error);
    else this.actual.onComplete();
  }
}
