import { config as rxConfig } from 'rxjs';
import { doFinally, doOnCancel, doOnRequest, filter, fromIterable, map, onDiscard } from '../../../src/flow';
import type { FinallySignal } from '../../../src/flow';
import { TestPublisher, record } from './test-publisher';

describe('map', () => {
  it('transforms each element and passes demand through untouched', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(map((x: number, i) => `${x}@${i}`)));
    rec.sub.request(2);
    pub.next(5, 6);
    expect(pub.requests).toEqual([2]);
    expect(rec.values).toEqual(['5@0', '6@1']);
  });

  it('cancels the upstream and signals the error when the projection throws', () => {
    const pub = new TestPublisher<number>();
    const boom = new Error('boom');
    const rec = record(
      pub.flow.pipe(
        map(() => {
          throw boom;
        }),
      ),
    );
    rec.sub.request(1);
    pub.next(1);
    expect(pub.cancelled).toBe(true);
    expect(rec.errors).toEqual([boom]);
  });
});

describe('filter', () => {
  it('replenishes request(1) upstream for every rejected element', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(filter((x: number) => x % 2 === 0)));
    rec.sub.request(2);
    pub.next(1, 2, 3, 4);
    expect(rec.values).toEqual([2, 4]);
    expect(pub.requests).toEqual([2, 1, 1]);
    expect(pub.overEmitted).toBe(false);
  });

  it('discards rejected elements', () => {
    const discarded: unknown[] = [];
    const rec = record(fromIterable([1, 2, 3]).pipe(filter((x: number) => x !== 2), onDiscard((v) => discarded.push(v))));
    rec.sub.request(5);
    expect(rec.values).toEqual([1, 3]);
    expect(discarded).toEqual([2]);
  });

  it('narrows the type with a type guard', () => {
    const rec = record(fromIterable<string | number>(['a', 1, 'b']).pipe(filter((v): v is string => typeof v === 'string')));
    rec.sub.request(5);
    const upper: string[] = rec.values.map((s) => s.toUpperCase());
    expect(upper).toEqual(['A', 'B']);
  });

  it('cancels the upstream, signals the error and discards the element when the predicate throws', () => {
    const pub = new TestPublisher<number>();
    const discarded: unknown[] = [];
    const boom = new Error('boom');
    const rec = record(
      pub.flow.pipe(
        filter<number>(() => {
          throw boom;
        }),
        onDiscard((v) => discarded.push(v)),
      ),
    );
    rec.sub.request(1);
    pub.next(9);
    expect(pub.cancelled).toBe(true);
    expect(rec.errors).toEqual([boom]);
    expect(discarded).toEqual([9]);
  });
});

describe('doOnRequest', () => {
  it('sees every request before it goes upstream', () => {
    const pub = new TestPublisher<number>();
    const seen: number[] = [];
    const rec = record(pub.flow.pipe(doOnRequest<number>((n) => seen.push(n))));
    rec.sub.request(3);
    rec.sub.request(Infinity);
    expect(seen).toEqual([3, Infinity]);
    expect(pub.requests).toEqual([3, Infinity]);
  });

  it('still forwards the request when the hook throws', async () => {
    const reported: unknown[] = [];
    rxConfig.onUnhandledError = (e) => reported.push(e);
    try {
      const pub = new TestPublisher<number>();
      const rec = record(
        pub.flow.pipe(
          doOnRequest<number>(() => {
            throw new Error('hook');
          }),
        ),
      );
      rec.sub.request(2);
      expect(pub.requests).toEqual([2]);
      await new Promise((r) => setTimeout(r, 5));
      expect(reported).toHaveLength(1);
    } finally {
      rxConfig.onUnhandledError = null;
    }
  });
});

describe('doOnCancel', () => {
  it('runs once on cancel, before the cancel goes upstream', () => {
    const pub = new TestPublisher<number>();
    const order: string[] = [];
    const rec = record(pub.flow.pipe(doOnCancel<number>(() => order.push(`hook, upstream cancelled=${pub.cancelled}`))));
    rec.sub.cancel();
    rec.sub.cancel();
    expect(order).toEqual(['hook, upstream cancelled=false']);
    expect(pub.cancelled).toBe(true);
  });

  it('does not run on completion', () => {
    let calls = 0;
    const rec = record(fromIterable([1]).pipe(doOnCancel<number>(() => calls++)));
    rec.sub.request(1);
    expect(rec.completed).toBe(1);
    expect(calls).toBe(0);
  });
});

describe('doFinally', () => {
  function run(drive: (pub: TestPublisher<number>, rec: ReturnType<typeof record<number>>) => void): string[] {
    const pub = new TestPublisher<number>();
    const log: string[] = [];
    const rec = record(pub.flow.pipe(doFinally<number>((s: FinallySignal) => log.push(`finally:${s}`))), {
      complete: () => log.push('complete'),
    });
    drive(pub, rec);
    if (rec.errors.length > 0) log.unshift('error');
    return log;
  }

  it("reports 'complete' after the downstream saw onComplete", () => {
    expect(run((pub) => pub.complete())).toEqual(['complete', 'finally:complete']);
  });

  it("reports 'error' once", () => {
    expect(
      run((pub) => {
        pub.error(new Error('x'));
      }),
    ).toEqual(['error', 'finally:error']);
  });

  it("reports 'cancel' once, after the upstream was cancelled", () => {
    let upstreamCancelledFirst = false;
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(doFinally<number>(() => (upstreamCancelledFirst = pub.cancelled))));
    rec.sub.cancel();
    expect(upstreamCancelledFirst).toBe(true);
  });
});
