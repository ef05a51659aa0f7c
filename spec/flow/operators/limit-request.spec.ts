import { fromIterable, doOnRequest, limitRequest, take } from '../../../src/flow';
import { TestPublisher, range, record } from './test-publisher';

describe('limitRequest', () => {
  it('trims requests so their sum never exceeds the cap: cap 11, requests 8,2,2,2,2 → 8, 2, 1', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRequest(11)));
    for (const n of [8, 2, 2, 2, 2]) {
      rec.sub.request(n);
      pub.emitDemanded((i) => rec.values.length + i);
    }
    expect(pub.requests).toEqual([8, 2, 1]);
    expect(rec.values).toHaveLength(11);
  });

  it('completes and cancels the upstream at the cap-th element', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRequest(3)));
    rec.sub.request(10);
    expect(pub.requests).toEqual([3]);
    pub.next(1, 2);
    expect(rec.completed).toBe(0);
    pub.next(3);
    expect(rec.values).toEqual([1, 2, 3]);
    expect(rec.completed).toBe(1);
    expect(pub.cancelled).toBe(true);
  });

  it('turns an unbounded request into a request of the cap', () => {
    const requests: number[] = [];
    const rec = record(fromIterable(range(1, 100)).pipe(doOnRequest<number>((n) => requests.push(n)), limitRequest<number>(5)));
    rec.sub.request(Infinity);
    expect(requests).toEqual([5]);
    expect(rec.values).toEqual([1, 2, 3, 4, 5]);
    expect(rec.completed).toBe(1);
  });

  it('completes at once without subscribing upstream when the cap is 0', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRequest(0)));
    expect(rec.completed).toBe(1);
    expect(pub.subscribed).toBe(0);
  });

  it('forwards an upstream completion before the cap', () => {
    const rec = record(fromIterable([1, 2]).pipe(limitRequest(5)));
    rec.sub.request(5);
    expect(rec.values).toEqual([1, 2]);
    expect(rec.completed).toBe(1);
  });

  it('throws RangeError at build time for a negative or fractional cap', () => {
    expect(() => limitRequest(-1)).toThrow(RangeError);
    expect(() => limitRequest(2.5)).toThrow(RangeError);
    expect(() => limitRequest(NaN)).toThrow(RangeError);
  });
});

describe('take', () => {
  it('defaults to limitRequest semantics (Reactor 3.5+)', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(take(3)));
    rec.sub.request(10);
    expect(pub.requests).toEqual([3]);
  });

  it('with limitRequest=false requests unbounded when the first request covers n', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(take(3, false)));
    rec.sub.request(10);
    pub.next(1, 2, 3);
    expect(pub.requests).toEqual([Infinity]);
    expect(rec.completed).toBe(1);
    expect(pub.cancelled).toBe(true);
  });

  it('with limitRequest=false passes smaller requests through', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(take(5, false)));
    rec.sub.request(2);
    rec.sub.request(2);
    expect(pub.requests).toEqual([2, 2]);
  });
});
