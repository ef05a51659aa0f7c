import { BufferOverflowError } from '../../../src/errors';
import { ByteBudget, onBackpressureBuffer, onDiscard } from '../../../src/flow';
import type { OnBackpressureBufferOptions } from '../../../src/flow';
import { TestPublisher, record } from './test-publisher';

function setup<T>(options: OnBackpressureBufferOptions<T> | number = {}) {
  const pub = new TestPublisher<T>();
  const discarded: unknown[] = [];
  const rec = record(pub.flow.pipe(onBackpressureBuffer<T>(options), onDiscard((v) => discarded.push(v))));
  return { pub, rec, discarded };
}

describe('onBackpressureBuffer', () => {
  it('requests Infinity upstream at subscription', () => {
    const { pub } = setup();
    expect(pub.requests).toEqual([Infinity]);
  });

  it('parks what downstream did not ask for and delivers it in order on request', () => {
    const { pub, rec } = setup({ maxItems: 10 });
    pub.next(1, 2, 3);
    expect(rec.values).toEqual([]);
    rec.sub.request(2);
    expect(rec.values).toEqual([1, 2]);
    pub.next(4);
    rec.sub.request(5);
    expect(rec.values).toEqual([1, 2, 3, 4]);
  });

  it('passes elements straight through while downstream has demand', () => {
    const { pub, rec } = setup({ maxItems: 1 });
    rec.sub.request(3);
    pub.next(1, 2, 3);
    expect(rec.values).toEqual([1, 2, 3]);
  });

  it('completes only after the backlog was delivered', () => {
    const { pub, rec } = setup({ maxItems: 5 });
    pub.next(1, 2);
    pub.complete();
    expect(rec.completed).toBe(0);
    rec.sub.request(1);
    expect(rec.completed).toBe(0);
    rec.sub.request(1);
    expect(rec.completed).toBe(1);
  });

  it('takes a number as maxItems, like Reactor onBackpressureBuffer(int)', () => {
    const { pub, rec } = setup<number>(2);
    pub.next(1, 2, 3);
    expect(pub.cancelled).toBe(true);
    rec.sub.request(5);
    expect(rec.errors[0]).toBeInstanceOf(BufferOverflowError);
  });

  describe("overflow 'error' (default)", () => {
    it('cancels the upstream at once and hands the element to onOverflow, then onDiscard', () => {
      const order: string[] = [];
      const pub = new TestPublisher<string>();
      record(
        pub.flow.pipe(
          onBackpressureBuffer<string>({
            maxItems: 2,
            onOverflow: (v) => order.push(`overflow:${v}`),
            onDiscard: (v) => order.push(`own-discard:${v}`),
          }),
          onDiscard((v) => order.push(`context-discard:${String(v)}`)),
        ),
      );
      pub.next('a', 'b', 'c');
      expect(pub.cancelled).toBe(true);
      expect(order).toEqual(['overflow:c', 'own-discard:c', 'context-discard:c']);
    });

    it('delivers the backlog on demand, then signals BufferOverflowError', () => {
      const { pub, rec } = setup<string>({ maxItems: 2 });
      pub.next('a', 'b', 'c');
      expect(rec.errors).toEqual([]);
      rec.sub.request(1);
      expect(rec.values).toEqual(['a']);
      expect(rec.errors).toEqual([]);
      rec.sub.request(1);
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toHaveLength(1);
      expect(rec.errors[0]).toBeInstanceOf(BufferOverflowError);
      expect((rec.errors[0] as BufferOverflowError).code).toBe('ERR_TIDEGATE_OVERFLOW');
    });

    it('lets an upstream error wait behind the backlog', () => {
      const { pub, rec } = setup<number>({ maxItems: 5 });
      const boom = new Error('boom');
      pub.next(1, 2);
      pub.error(boom);
      expect(rec.errors).toEqual([]);
      rec.sub.request(2);
      expect(rec.values).toEqual([1, 2]);
      expect(rec.errors).toEqual([boom]);
    });
  });

  describe("overflow 'terminate'", () => {
    it('cancels upstream, discards the backlog and signals the error at once', () => {
      const { pub, rec, discarded } = setup<string>({ maxItems: 2, overflow: 'terminate' });
      pub.next('a', 'b', 'c');
      expect(pub.cancelled).toBe(true);
      expect(rec.errors[0]).toBeInstanceOf(BufferOverflowError);
      expect(rec.values).toEqual([]);
      expect(discarded).toEqual(['c', 'a', 'b']);
    });

    it('lets an upstream error cut ahead of the backlog even with onOverflow', () => {
      const { pub, rec, discarded } = setup<number>({ maxItems: 5, overflow: 'terminate', onOverflow: () => undefined });
      const boom = new Error('boom');
      pub.next(1, 2);
      pub.error(boom);
      expect(rec.errors).toEqual([boom]);
      expect(discarded).toEqual([1, 2]);
    });
  });

  describe("overflow 'drop-latest'", () => {
    it('drops the incoming element and keeps the backlog and the upstream', () => {
      const overflowed: string[] = [];
      const { pub, rec, discarded } = setup<string>({ maxItems: 2, overflow: 'drop-latest', onOverflow: (v) => overflowed.push(v) });
      pub.next('a', 'b', 'c', 'd');
      expect(pub.cancelled).toBe(false);
      expect(overflowed).toEqual(['c', 'd']);
      expect(discarded).toEqual(['c', 'd']);
      rec.sub.request(5);
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toEqual([]);
    });

    it('without onOverflow, lets an upstream error cut ahead and discards the backlog', () => {
      const { pub, rec, discarded } = setup<number>({ maxItems: 5, overflow: 'drop-latest' });
      const boom = new Error('boom');
      pub.next(1, 2);
      pub.error(boom);
      expect(rec.errors).toEqual([boom]);
      expect(rec.values).toEqual([]);
      expect(discarded).toEqual([1, 2]);
    });

    it('with onOverflow, lets an upstream error wait behind the backlog', () => {
      const { pub, rec } = setup<number>({ maxItems: 5, overflow: 'drop-latest', onOverflow: () => undefined });
      const boom = new Error('boom');
      pub.next(1, 2);
      pub.error(boom);
      expect(rec.errors).toEqual([]);
      rec.sub.request(2);
      expect(rec.values).toEqual([1, 2]);
      expect(rec.errors).toEqual([boom]);
    });
  });

  describe("overflow 'drop-oldest'", () => {
    it('evicts the oldest element to make room for the incoming one', () => {
      const overflowed: string[] = [];
      const { pub, rec, discarded } = setup<string>({ maxItems: 2, overflow: 'drop-oldest', onOverflow: (v) => overflowed.push(v) });
      pub.next('a', 'b', 'c', 'd');
      expect(overflowed).toEqual(['a', 'b']);
      expect(discarded).toEqual(['a', 'b']);
      rec.sub.request(5);
      expect(rec.values).toEqual(['c', 'd']);
    });

    it('evicts as many oldest elements as the incoming one needs bytes', () => {
      const { pub, rec, discarded } = setup<string>({ maxBytes: 4, overflow: 'drop-oldest' });
      pub.next('a', 'b', 'c', 'dd', 'eee');
      // 'dd' evicts 'a' (b,c,dd = 4 bytes); 'eee' then evicts 'b', 'c' and 'dd'
      expect(discarded).toEqual(['a', 'b', 'c', 'dd']);
      rec.sub.request(5);
      expect(rec.values).toEqual(['eee']);
    });

    it('refuses an element larger than the whole budget without evicting the backlog', () => {
      const { pub, rec, discarded } = setup<string>({ maxBytes: 4, overflow: 'drop-oldest' });
      pub.next('ab', 'toolong');
      expect(discarded).toEqual(['toolong']);
      rec.sub.request(5);
      expect(rec.values).toEqual(['ab']);
    });
  });

  describe('byte budget (UTF-8)', () => {
    it('a 4-byte emoji fills a 4-byte budget and the next 1-byte element overflows', () => {
      const { pub, rec } = setup<string>({ maxBytes: 4, overflow: 'terminate' });
      pub.next('😀');
      expect(rec.errors).toEqual([]);
      pub.next('a');
      expect(rec.errors[0]).toBeInstanceOf(BufferOverflowError);
    });

    it('taking the emoji returns its 4 bytes to the budget', () => {
      const changes: [number, number][] = [];
      const { pub, rec } = setup<string>({ maxBytes: 4, overflow: 'terminate', onBufferChange: (b, n) => changes.push([b, n]) });
      pub.next('😀');
      expect(changes).toEqual([[4, 1]]);
      rec.sub.request(1);
      expect(rec.values).toEqual(['😀']);
      expect(changes).toEqual([
        [4, 1],
        [0, 0],
      ]);
      pub.next('abcd');
      expect(rec.errors).toEqual([]);
      expect(changes[changes.length - 1]).toEqual([4, 1]);
    });

    it('refuses a single element larger than the whole budget, even with demand', () => {
      const { pub, rec, discarded } = setup<string>({ maxBytes: 4, overflow: 'terminate' });
      rec.sub.request(10);
      pub.next('éé€'); // 2 + 2 + 3 = 7 bytes
      expect(rec.values).toEqual([]);
      expect(discarded).toEqual(['éé€']);
      expect(rec.errors[0]).toBeInstanceOf(BufferOverflowError);
    });

    it('measures Buffers and typed arrays by byteLength', () => {
      const changes: number[] = [];
      const { pub } = setup<ArrayBufferView>({ maxBytes: 100, onBufferChange: (b) => changes.push(b) });
      pub.next(Buffer.from('hello'), new Uint8Array(7), new Uint16Array(3));
      expect(changes).toEqual([5, 12, 18]);
    });

    it('measures other values by the UTF-8 length of their JSON text', () => {
      const changes: number[] = [];
      const { pub } = setup<object>({ maxBytes: 100, onBufferChange: (b) => changes.push(b) });
      pub.next({ t: 'é' }); // {"t":"é"} = 10 bytes
      expect(changes).toEqual([10]);
    });

    it('uses a custom sizeOf', () => {
      const { pub, rec } = setup<{ n: number }>({ maxBytes: 10, sizeOf: (v) => v.n, overflow: 'terminate' });
      pub.next({ n: 6 }, { n: 4 });
      expect(rec.errors).toEqual([]);
      pub.next({ n: 1 });
      expect(rec.errors).toHaveLength(1);
    });

    it('cancels upstream and signals the error when sizeOf throws or returns an invalid size', () => {
      const { pub, rec } = setup<number>({ maxBytes: 10, sizeOf: () => NaN });
      pub.next(1);
      expect(pub.cancelled).toBe(true);
      expect(rec.errors[0]).toBeInstanceOf(RangeError);
    });

    it('applies maxItems and maxBytes together', () => {
      const { pub, rec } = setup<string>({ maxItems: 2, maxBytes: 100, overflow: 'terminate' });
      pub.next('a', 'b', 'c');
      expect(rec.errors).toHaveLength(1);
    });
  });

  it('discards the backlog on cancel: own onDiscard first, then the context hook', () => {
    const order: string[] = [];
    const pub = new TestPublisher<string>();
    const rec = record(
      pub.flow.pipe(
        onBackpressureBuffer<string>({ onDiscard: (v) => order.push(`own:${v}`) }),
        onDiscard((v) => order.push(`ctx:${String(v)}`)),
      ),
    );
    pub.next('a', 'b');
    rec.sub.cancel();
    expect(pub.cancelled).toBe(true);
    expect(order).toEqual(['own:a', 'ctx:a', 'own:b', 'ctx:b']);
  });

  it('throws RangeError at build time for maxItems < 1, maxBytes < 1 or an unknown strategy', () => {
    expect(() => onBackpressureBuffer({ maxItems: 0 })).toThrow(RangeError);
    expect(() => onBackpressureBuffer({ maxItems: 1.5 })).toThrow(RangeError);
    expect(() => onBackpressureBuffer({ maxBytes: 0 })).toThrow(RangeError);
    expect(() => onBackpressureBuffer({ maxBytes: NaN })).toThrow(RangeError);
    expect(() => onBackpressureBuffer({ overflow: 'bogus' as never })).toThrow(RangeError);
  });
});

describe('onBackpressureBuffer with a shared ByteBudget', () => {
  it('acquires parked bytes from the budget, overflows when it is spent and releases on delivery', () => {
    const budget = new ByteBudget(6);
    expect(budget.tryAcquire(2)).toBe(true); // another stage holds 2 bytes
    const { pub, rec } = setup<string>({ budget, overflow: 'drop-latest' });
    pub.next('abc');
    expect(budget.used).toBe(5);
    pub.next('xy'); // 5 + 2 > 6
    rec.sub.request(5);
    expect(rec.values).toEqual(['abc']);
    expect(budget.used).toBe(2);
  });

  it('releases the backlog bytes on cancel', () => {
    const budget = new ByteBudget(100);
    const { pub, rec } = setup<string>({ budget });
    pub.next('hello', 'world');
    expect(budget.used).toBe(10);
    rec.sub.cancel();
    expect(budget.used).toBe(0);
  });
});
