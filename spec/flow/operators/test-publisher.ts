import { Flow } from '../../../src/flow';
import type { FlowContext, FlowObserver, FlowSubscription, Subscriber } from '../../../src/flow';

/**
 * A hand-driven source that records every `request(n)` and `cancel()` it receives, like
 * Reactor's `TestPublisher`. `next` delivers even beyond demand (to test misbehaving sources);
 * `overEmitted` tells whether that happened.
 */
export class TestPublisher<T> {
  readonly requests: number[] = [];
  cancelled = false;
  subscribed = 0;
  context: FlowContext = {};
  private subscriber: Subscriber<T> | undefined;
  private demand = 0;
  overEmitted = false;

  readonly flow = new Flow<T>((actual, context) => {
    this.subscribed++;
    this.subscriber = actual;
    this.context = context;
    actual.onSubscribe({
      request: (n) => {
        this.requests.push(n);
        this.demand = this.demand + n;
      },
      cancel: () => {
        this.cancelled = true;
      },
    });
  });

  /** Outstanding demand not yet answered. */
  get requested(): number {
    return this.demand;
  }

  next(...values: T[]): this {
    for (const v of values) {
      if (this.demand <= 0) this.overEmitted = true;
      else if (this.demand !== Infinity) this.demand--;
      this.subscriber?.onNext(v);
    }
    return this;
  }

  /** Emits `count` values from `make(i)` but only as far as the outstanding demand allows. */
  emitDemanded(make: (i: number) => T, max = 1000): number {
    let i = 0;
    while (this.demand > 0 && i < max && !this.cancelled) this.next(make(i++));
    return i;
  }

  complete(): void {
    this.subscriber?.onComplete();
  }

  error(e: unknown): void {
    this.subscriber?.onError(e);
  }
}

/** Collects every signal of a demand subscription. */
export interface Recorder<T> {
  values: T[];
  errors: unknown[];
  completed: number;
  sub: FlowSubscription;
}

/** Subscribes with no initial demand and records signals. */
export function record<T>(flow: Flow<T>, extra: FlowObserver<T> = {}): Recorder<T> {
  const rec = { values: [] as T[], errors: [] as unknown[], completed: 0 } as Recorder<T>;
  rec.sub = flow.subscribeWithDemand({
    onSubscribe: extra.onSubscribe,
    next: (v) => {
      rec.values.push(v);
      extra.next?.(v);
    },
    error: (e) => {
      rec.errors.push(e);
      extra.error?.(e);
    },
    complete: () => {
      rec.completed++;
      extra.complete?.();
    },
  });
  return rec;
}

/** `[from, from+1, …, to]`. */
export function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}
