import { onBackpressureDrop, onBackpressureLatest, onDiscard } from '../../../src/flow';
import { TestPublisher, record } from './test-publisher';

describe('onBackpressureDrop', () => {
  it('requests Infinity upstream at subscription', () => {
    const pub = new TestPublisher<number>();
    record(pub.flow.pipe(onBackpressureDrop()));
    expect(pub.requests).toEqual([Infinity]);
  });

  it('delivers elements while there is demand and drops the rest to onDrop, then onDiscard', () => {
    const pub = new TestPublisher<number>();
    const order: string[] = [];
    const rec = record(pub.flow.pipe(onBackpressureDrop<number>((v) => order.push(`drop:${v}`)), onDiscard((v) => order.push(`discard:${String(v)}`))));
    rec.sub.request(1);
    pub.next(1, 2, 3);
    rec.sub.request(1);
    pub.next(4);
    expect(rec.values).toEqual([1, 4]);
    expect(order).toEqual(['drop:2', 'discard:2', 'drop:3', 'discard:3']);
  });

  it('completes without waiting for demand', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(onBackpressureDrop()));
    pub.next(1);
    pub.complete();
    expect(rec.completed).toBe(1);
  });

  it('forwards an upstream error at once', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(onBackpressureDrop()));
    const boom = new Error('boom');
    pub.error(boom);
    expect(rec.errors).toEqual([boom]);
  });

  it('cancels the upstream and signals the error when onDrop throws', () => {
    const pub = new TestPublisher<number>();
    const boom = new Error('onDrop');
    const rec = record(
      pub.flow.pipe(
        onBackpressureDrop<number>(() => {
          throw boom;
        }),
      ),
    );
    pub.next(1);
    expect(pub.cancelled).toBe(true);
    expect(rec.errors).toEqual([boom]);
  });
});

describe('onBackpressureLatest', () => {
  it('requests Infinity upstream at subscription', () => {
    const pub = new TestPublisher<number>();
    record(pub.flow.pipe(onBackpressureLatest()));
    expect(pub.requests).toEqual([Infinity]);
  });

  it('keeps only the latest undelivered element and discards the ones it replaces', () => {
    const pub = new TestPublisher<number>();
    const discarded: unknown[] = [];
    const rec = record(pub.flow.pipe(onBackpressureLatest<number>(), onDiscard((v) => discarded.push(v))));
    pub.next(1, 2, 3);
    expect(discarded).toEqual([1, 2]);
    rec.sub.request(1);
    expect(rec.values).toEqual([3]);
    rec.sub.request(1);
    pub.next(4);
    expect(rec.values).toEqual([3, 4]);
  });

  it('delivers its retained element before completing', () => {
    const pub = new TestPublisher<number>();
    const rec = record(pub.flow.pipe(onBackpressureLatest()));
    pub.next(1, 2);
    pub.complete();
    expect(rec.completed).toBe(0);
    rec.sub.request(1);
    expect(rec.values).toEqual([2]);
    expect(rec.completed).toBe(1);
  });

  it('lets an error cut ahead and discards the retained element', () => {
    const pub = new TestPublisher<number>();
    const discarded: unknown[] = [];
    const rec = record(pub.flow.pipe(onBackpressureLatest<number>(), onDiscard((v) => discarded.push(v))));
    const boom = new Error('boom');
    pub.next(1);
    pub.error(boom);
    expect(rec.errors).toEqual([boom]);
    expect(discarded).toEqual([1]);
  });

  it('discards the retained element on cancel', () => {
    const pub = new TestPublisher<number>();
    const discarded: unknown[] = [];
    const rec = record(pub.flow.pipe(onBackpressureLatest<number>(), onDiscard((v) => discarded.push(v))));
    pub.next(7);
    rec.sub.cancel();
    expect(pub.cancelled).toBe(true);
    expect(discarded).toEqual([7]);
  });

  it('retains an undefined element like any other', () => {
    const pub = new TestPublisher<number | undefined>();
    const rec = record(pub.flow.pipe(onBackpressureLatest()));
    pub.next(undefined);
    pub.complete();
    rec.sub.request(1);
    expect(rec.values).toEqual([undefined]);
    expect(rec.completed).toBe(1);
  });
});
