import { PassThrough } from 'node:stream';
import { config as rxConfig } from 'rxjs';
import { filter as rxFilter, map as rxMap, mergeMap, take as rxTake } from 'rxjs/operators';
import {
  createFlow,
  firstTimeout,
  fromIterable,
  fromReadable,
  idleTimeout,
  limitRate,
  limitRequest,
  onBackpressureBuffer,
  onDiscard,
  totalTimeout,
  type FlowSink,
  type FlowSubscription,
} from '../../src/flow';

/**
 * Flow specs in the style of the Reactive Streams TCK: invalid requests, requests
 * after cancel, re-entrancy a million deep, throwing user callbacks, demand overflow, hostile
 * sizeOf functions, and timeouts racing cancel.
 */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let unhandled: unknown[] = [];
let savedHandler: typeof rxConfig.onUnhandledError;
beforeEach(() => {
  unhandled = [];
  savedHandler = rxConfig.onUnhandledError;
  rxConfig.onUnhandledError = (err) => unhandled.push(err);
});
afterEach(() => {
  rxConfig.onUnhandledError = savedHandler;
});

describe('Flow#subscribeWithDemand (rule 3.9)', () => {
  it.each([0, -1, NaN, 1.5, -Infinity, '3', null, undefined])('request(%p) cancels the source and signals a rule 3.9 RangeError', (bad) => {
    let cancelled = 0;
    const errors: unknown[] = [];
    const sub = createFlow<number>((sink) => {
      sink.onCancel(() => cancelled++);
    }).subscribeWithDemand({ error: (e) => errors.push(e) });
    sub.request(bad as number);
    sub.request(1);
    sub.request(0);
    expect(cancelled).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(RangeError);
    expect(String((errors[0] as Error).message)).toMatch(/3\.9/);
  });

  it('request and cancel after cancel are no-ops', () => {
    const requests: number[] = [];
    let cancels = 0;
    const errors: unknown[] = [];
    const sub = createFlow<number>((sink) => {
      sink.onRequest((n) => requests.push(n)).onCancel(() => cancels++);
    }).subscribeWithDemand({ error: (e) => errors.push(e) });
    sub.cancel();
    sub.request(1);
    sub.request(-1);
    sub.cancel();
    expect(requests).toEqual([]);
    expect(cancels).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a sum of requests past MAX_SAFE_INTEGER becomes unbounded', () => {
    let sink!: FlowSink<number>;
    const sub = createFlow<number>((s) => {
      sink = s;
    }).subscribeWithDemand({});
    sub.request(Number.MAX_SAFE_INTEGER - 1);
    sub.request(5);
    expect(sink.requested).toBe(Infinity);
  });
});

describe('re-entrancy', () => {
  it('request(1) inside next through limitRate(1) over 1e6 elements does not overflow the stack', () => {
    const items = Array.from({ length: 1_000_000 }, (_, i) => i);
    let count = 0;
    let completed = false;
    const errors: unknown[] = [];
    const sub: FlowSubscription = fromIterable(items)
      .pipe(limitRate(1))
      .subscribeWithDemand({
        next: () => {
          count++;
          sub.request(1);
        },
        error: (e) => errors.push(e),
        complete: () => (completed = true),
      });
    sub.request(1);
    expect(errors).toEqual([]);
    expect(count).toBe(1_000_000);
    expect(completed).toBe(true);
  });

  it('a generator source with request(1) inside next, 1e6 deep, completes', () => {
    function* naturals(): Generator<number> {
      for (let i = 0; i < 1_000_000; i++) yield i;
    }
    let count = 0;
    let completed = false;
    const sub: FlowSubscription = fromIterable(naturals())
      .pipe(limitRate(1))
      .subscribeWithDemand({
        next: () => {
          count++;
          sub.request(1);
        },
        complete: () => (completed = true),
      });
    sub.request(1);
    expect([count, completed]).toEqual([1_000_000, true]);
  });

  it('a createFlow producer emitting inside onRequest, with request(1) inside next, 1e5 deep', () => {
    let emitted = 0;
    let count = 0;
    const sub: FlowSubscription = createFlow<number>((sink) => {
      sink.onRequest((n) => {
        for (let i = 0; i < n && emitted < 100_000; i++) sink.next(emitted++);
        if (emitted === 100_000) sink.complete();
      });
    }).subscribeWithDemand({
      next: () => {
        count++;
        sub.request(1);
      },
    });
    sub.request(1);
    expect(count).toBe(100_000);
  });

  it('cancel inside next stops emission and discards what limitRate holds', () => {
    const seen: number[] = [];
    const discarded: unknown[] = [];
    let completed = false;
    const sub: FlowSubscription = fromIterable([1, 2, 3, 4, 5])
      .pipe(limitRate(4), onDiscard((v) => discarded.push(v)))
      .subscribeWithDemand({
        next: (v) => {
          seen.push(v);
          if (v === 2) sub.cancel();
        },
        complete: () => (completed = true),
      });
    sub.request(10);
    expect(seen).toEqual([1, 2]);
    expect(completed).toBe(false);
    expect([...discarded].sort()).toEqual([3, 4, 5]);
  });
});

describe('a throwing observer callback does not unwind into the source', () => {
  it('next throwing cancels the source and signals the exception to error', () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const boom = new Error('boom');
    const sub = fromIterable([1, 2, 3]).subscribeWithDemand({
      next: (v) => {
        seen.push(v);
        if (v === 1) throw boom;
      },
      error: (e) => errors.push(e),
    });
    expect(() => sub.request(3)).not.toThrow();
    sub.request(3);
    expect(seen).toEqual([1]);
    expect(errors).toEqual([boom]);
  });

  it('next throwing does not wedge a createFlow source: its teardown runs', () => {
    let sink!: FlowSink<number>;
    let disposed = 0;
    const errors: unknown[] = [];
    createFlow<number>((s) => {
      sink = s;
      return () => disposed++;
    }).subscribeWithDemand({
      onSubscribe: (s) => s.request(10),
      next: () => {
        throw new Error('consumer bug');
      },
      error: (e) => errors.push(e),
    });
    expect(() => sink.next(1)).not.toThrow();
    expect(sink.isCancelled).toBe(true);
    expect(disposed).toBe(1);
    expect(errors.map((e) => (e as Error).message)).toEqual(['consumer bug']);
  });

  it('next throwing inside a Node stream "data" handler does not escape into the stream', () => {
    const readable = new PassThrough();
    const errors: unknown[] = [];
    fromReadable<Buffer>(readable).subscribeWithDemand({
      onSubscribe: (s) => s.request(Infinity),
      next: () => {
        throw new Error('consumer bug');
      },
      error: (e) => errors.push(e),
    });
    expect(() => readable.write('x')).not.toThrow();
    expect(readable.destroyed).toBe(true);
    expect(errors).toHaveLength(1);
  });

  it('onSubscribe throwing cancels the source instead of escaping subscribeWithDemand', () => {
    let cancelled = 0;
    const errors: unknown[] = [];
    const flow = createFlow<number>((sink) => {
      sink.onCancel(() => cancelled++);
    });
    expect(() =>
      flow.subscribeWithDemand({
        onSubscribe: () => {
          throw new Error('os');
        },
        error: (e) => errors.push(e),
      }),
    ).not.toThrow();
    expect(cancelled).toBe(1);
    expect(errors.map((e) => (e as Error).message)).toEqual(['os']);
  });

  it('createFlow: onCancel registered after an early cancel runs at once', () => {
    let cancelled = 0;
    createFlow<number>((sink) => {
      sink.onCancel(() => cancelled++);
    }).subscribeWithDemand({ onSubscribe: (s) => s.cancel() });
    expect(cancelled).toBe(1);
  });

  it('complete throwing is reported as unhandled and the source still tears down', async () => {
    let disposed = 0;
    let sink!: FlowSink<number>;
    createFlow<number>((s) => {
      sink = s;
      return () => disposed++;
    }).subscribeWithDemand({
      complete: () => {
        throw new Error('complete bug');
      },
    });
    expect(() => sink.complete()).not.toThrow();
    expect(disposed).toBe(1);
    await sleep(5);
    expect(unhandled.map((e) => (e as Error).message)).toEqual(['complete bug']);
  });
});

describe('lifted RxJS operators', () => {
  it('an operator emitting two values per input under bounded demand signals an error, never over-emits', () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const sub = fromIterable([1, 2, 3])
      .pipe(mergeMap((x: number) => [x, x * 10]))
      .subscribeWithDemand({ next: (v) => seen.push(v), error: (e) => errors.push(e) });
    sub.request(1);
    expect(seen).toEqual([1]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TypeError);
  });

  it('a request made inside onSubscribe reaches a sync source only once the operator listens, losing no element', () => {
    const seen: unknown[] = [];
    let completed = false;
    fromIterable([1, 2, 3])
      .pipe(rxMap((x: number) => x * 2))
      .subscribeWithDemand({ onSubscribe: (s) => s.request(10), next: (v) => seen.push(v), complete: () => (completed = true) });
    expect(seen).toEqual([2, 4, 6]);
    expect(completed).toBe(true);
  });

  it('under unbounded demand the same operator emits everything', () => {
    const seen: number[] = [];
    fromIterable([1, 2])
      .pipe(mergeMap((x: number) => [x, x * 10]))
      .subscribeWithDemand({ onSubscribe: (s) => s.request(Infinity), next: (v) => seen.push(v) });
    expect(seen).toEqual([1, 10, 2, 20]);
  });

  it('take(2) on an infinite generator completes and stops pulling', () => {
    let pulled = 0;
    function* forever(): Generator<number> {
      for (;;) yield pulled++;
    }
    const seen: unknown[] = [];
    let completed = false;
    const sub = fromIterable(forever())
      .pipe(rxTake<number>(2))
      .subscribeWithDemand({ next: (v) => seen.push(v), complete: () => (completed = true) });
    sub.request(5);
    expect(seen).toEqual([0, 1]);
    expect(completed).toBe(true);
    expect(pulled).toBeLessThanOrEqual(3);
  });

  it('filter replenishes one upstream request per dropped element', () => {
    const requests: number[] = [];
    const seen: number[] = [];
    let i = 0;
    const sub = createFlow<number>((sink) => {
      sink.onRequest((n) => {
        requests.push(n);
        for (let k = 0; k < n && i < 10; k++) sink.next(i++);
      });
    })
      .pipe(rxFilter((x: number) => x % 3 === 0))
      .subscribeWithDemand({ next: (v) => seen.push(v) });
    sub.request(2);
    expect(seen).toEqual([0, 3]);
    expect(requests).toEqual([2, 1, 1]);
  });
});

describe('operator arguments', () => {
  it.each([NaN, 1.5, -1])('limitRequest(%p) throws a RangeError when built', (cap) => {
    expect(() => limitRequest(cap)).toThrow(RangeError);
  });

  it.each([NaN, 0, -3, 2.5])('limitRate(%p) throws a RangeError when built', (high) => {
    expect(() => limitRate(high)).toThrow(RangeError);
  });

  it('limitRequest(Infinity) passes everything through and completes', () => {
    const seen: unknown[] = [];
    const sub = fromIterable([1, 2, 3])
      .pipe(limitRequest(Infinity))
      .subscribeWithDemand({ next: (v) => seen.push(v), complete: () => seen.push('done') });
    sub.request(10);
    expect(seen).toEqual([1, 2, 3, 'done']);
  });

  it('limitRate(Infinity) requests Infinity once', () => {
    const requests: number[] = [];
    const sub = createFlow<number>((sink) => {
      sink.onRequest((n) => requests.push(n));
    })
      .pipe(limitRate(Infinity))
      .subscribeWithDemand({});
    sub.request(3);
    sub.request(3);
    expect(requests).toEqual([Infinity]);
  });
});

describe('onBackpressureBuffer with a hostile sizeOf', () => {
  it.each<[string, () => unknown]>([
    ['throws', () => {
      throw new Error('sizeOf bug');
    }],
    ['returns NaN', () => NaN],
    ['returns a negative number', () => -5],
    ['returns Infinity', () => Infinity],
    ['returns a string', () => '3'],
  ])('sizeOf that %s signals an error and cancels the source', (_name, sizeOf) => {
    let cancelled = 0;
    const errors: unknown[] = [];
    const seen: unknown[] = [];
    let sink!: FlowSink<string>;
    const sub = createFlow<string>((s) => {
      sink = s;
      s.onCancel(() => cancelled++);
    })
      .pipe(onBackpressureBuffer<string>({ maxBytes: 10, sizeOf: sizeOf as (v: string) => number, overflow: 'error' }))
      .subscribeWithDemand({ next: (v) => seen.push(v), error: (e) => errors.push(e) });
    sink.next('a');
    sub.request(5);
    expect(errors).toHaveLength(1);
    expect(cancelled).toBe(1);
    expect(seen).toEqual([]);
  });
});

describe('timeouts racing cancel', () => {
  it('idleTimeout cancelled at the moment it would fire signals nothing', async () => {
    const errors: unknown[] = [];
    let cancelled = 0;
    const sub = createFlow<number>((sink) => {
      sink.onCancel(() => cancelled++);
    })
      .pipe(idleTimeout(20))
      .subscribeWithDemand({ error: (e) => errors.push(e) });
    sub.request(1);
    await sleep(20);
    sub.cancel();
    await sleep(40);
    expect(errors).toEqual([]);
    expect(cancelled).toBe(1);
  });

  it('totalTimeout after completion signals nothing', async () => {
    const signals: unknown[] = [];
    createFlow<number>((sink) => {
      sink.onRequest(() => {
        sink.next(1);
        sink.complete();
      });
    })
      .pipe(totalTimeout(10))
      .subscribeWithDemand({ onSubscribe: (s) => s.request(1), next: (v) => signals.push(v), error: (e) => signals.push(e), complete: () => signals.push('done') });
    await sleep(40);
    expect(signals).toEqual([1, 'done']);
  });

  it('firstTimeout fired: a late element from the source is not delivered and the source is cancelled', async () => {
    const signals: unknown[] = [];
    let sink!: FlowSink<number>;
    createFlow<number>((s) => {
      sink = s;
    })
      .pipe(firstTimeout(10))
      .subscribeWithDemand({
        onSubscribe: (s) => s.request(1),
        next: (v) => signals.push(v),
        error: (e) => signals.push((e as { code?: string }).code),
        complete: () => signals.push('done'),
      });
    await sleep(30);
    sink.next(1);
    sink.complete();
    expect(signals).toEqual(['ERR_TIDEGATE_TIMEOUT']);
    expect(sink.isCancelled).toBe(true);
  });
});
