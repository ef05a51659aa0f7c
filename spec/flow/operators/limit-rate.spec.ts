import { fromIterable, doOnRequest, limitRate, onDiscard } from '../../../src/flow';
import { TestPublisher, range, record } from './test-publisher';

function requestsThrough(highTide: number, lowTide: number | undefined, downstream: number[], size = 1000): { requests: number[]; values: number[] } {
  const requests: number[] = [];
  const rec = record(fromIterable(range(1, size)).pipe(doOnRequest<number>((n) => requests.push(n)), limitRate<number>(highTide, lowTide)));
  for (const n of downstream) rec.sub.request(n);
  return { requests, values: rec.values };
}

describe('limitRate', () => {
  it('requests highTide eagerly at subscription, before any downstream request', () => {
    const pub = new TestPublisher<number>();
    record(pub.flow.pipe(limitRate(10)));
    expect(pub.requests).toEqual([10]);
  });

  it('replenishes 75% of highTide by default: limitRate(8) → 8, 6, 6, …', () => {
    const { requests, values } = requestsThrough(8, undefined, [20]);
    expect(values).toEqual(range(1, 20));
    expect(requests).toEqual([8, 6, 6, 6]);
  });

  it('replenishes lowTide after lowTide elements: limitRate(10, 2) with request 14 → 10, 2×7', () => {
    const { requests, values } = requestsThrough(10, 2, [14]);
    expect(values).toHaveLength(14);
    expect(requests).toEqual([10, 2, 2, 2, 2, 2, 2, 2]);
  });

  it('replenishes a whole highTide when lowTide is 0', () => {
    const { requests } = requestsThrough(4, 0, [8]);
    expect(requests).toEqual([4, 4, 4]);
  });

  it('falls back to the 75% rule when lowTide >= highTide', () => {
    expect(requestsThrough(8, 8, [12]).requests).toEqual([8, 6, 6]);
    expect(requestsThrough(8, 20, [12]).requests).toEqual([8, 6, 6]);
  });

  it('requests Infinity once and never replenishes for limitRate(Infinity)', () => {
    const { requests, values } = requestsThrough(Infinity, undefined, [5, 100], 50);
    expect(values).toHaveLength(50);
    expect(requests).toEqual([Infinity]);
  });

  it('replenishes on emitted count, not on downstream demand', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRate(4)));
    pub.next(1, 2, 3, 4);
    expect(pub.requests).toEqual([4]);
    rec.sub.request(2);
    expect(pub.requests).toEqual([4]);
    rec.sub.request(1);
    expect(rec.values).toEqual([1, 2, 3]);
    expect(pub.requests).toEqual([4, 3]);
  });

  it('delivers an upstream error only after the queue drained', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRate(10)));
    const boom = new Error('boom');
    pub.next(1, 2, 3);
    pub.error(boom);
    expect(rec.errors).toEqual([]);
    rec.sub.request(2);
    expect(rec.values).toEqual([1, 2]);
    expect(rec.errors).toEqual([]);
    rec.sub.request(1);
    expect(rec.values).toEqual([1, 2, 3]);
    expect(rec.errors).toEqual([boom]);
  });

  it('completes after the queue drained', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRate(10)));
    pub.next(1, 2);
    pub.complete();
    expect(rec.completed).toBe(0);
    rec.sub.request(2);
    expect(rec.completed).toBe(1);
  });

  it('discards queued elements and cancels upstream on cancel', () => {
    const pub = new TestPublisher<number>();
    const discarded: unknown[] = [];
    const rec = record(pub.flow.pipe(limitRate<number>(10), onDiscard((v) => discarded.push(v))));
    pub.next(1, 2, 3);
    rec.sub.request(1);
    rec.sub.cancel();
    expect(pub.cancelled).toBe(true);
    expect(discarded).toEqual([2, 3]);
  });

  it('signals BufferOverflowError when the upstream emits beyond highTide', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(limitRate(2)));
    pub.next(1, 2, 3);
    expect(pub.cancelled).toBe(true);
    rec.sub.request(5);
    expect(rec.values).toEqual([1, 2]);
    expect(rec.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_OVERFLOW' });
  });

  it('throws RangeError at build time for highTide <= 0 or non-integers', () => {
    expect(() => limitRate(0)).toThrow(RangeError);
    expect(() => limitRate(-3)).toThrow(RangeError);
    expect(() => limitRate(1.5)).toThrow(RangeError);
    expect(() => limitRate(NaN)).toThrow(RangeError);
    expect(() => limitRate(4, 1.5)).toThrow(RangeError);
  });
});
