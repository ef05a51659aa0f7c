import { config as rxConfig } from 'rxjs';
import { filter, fromIterable, limitRate, onDiscard } from '../../../src/flow';
import { record } from './test-publisher';

describe('onDiscard', () => {
  afterEach(() => {
    rxConfig.onUnhandledError = null;
  });

  it('receives elements dropped by an operator upstream of it', () => {
    const discarded: unknown[] = [];
    const rec = record(fromIterable([1, 2, 3, 4]).pipe(filter((x: number) => x % 2 === 0), onDiscard((v) => discarded.push(v))));
    rec.sub.request(Infinity);
    expect(rec.values).toEqual([2, 4]);
    expect(discarded).toEqual([1, 3]);
  });

  it('does not receive discards from operators downstream of it', () => {
    const discarded: unknown[] = [];
    const rec = record(fromIterable([1, 2, 3, 4]).pipe(onDiscard((v) => discarded.push(v)), filter((x: number) => x % 2 === 0)));
    rec.sub.request(Infinity);
    expect(discarded).toEqual([]);
  });

  it('runs stacked hooks closest-first, like Reactor doOnDiscard', () => {
    const order: string[] = [];
    const rec = record(
      fromIterable([1, 2]).pipe(
        filter((x: number) => x > 1),
        onDiscard((v) => order.push(`inner:${String(v)}`)),
        onDiscard((v) => order.push(`outer:${String(v)}`)),
      ),
    );
    rec.sub.request(Infinity);
    expect(order).toEqual(['inner:1', 'outer:1']);
  });

  it('receives queued elements cleared on cancel', () => {
    const discarded: unknown[] = [];
    const rec = record(fromIterable([1, 2, 3, 4, 5]).pipe(limitRate<number>(3), onDiscard((v) => discarded.push(v))));
    rec.sub.request(1);
    rec.sub.cancel();
    // limitRate queued 2 and 3; fromIterable discards its look-ahead 4 and the rest of the array
    expect(discarded).toEqual([4, 5, 2, 3]);
  });

  it('isolates a throwing hook: the stream and the outer hooks carry on', async () => {
    const reported: unknown[] = [];
    rxConfig.onUnhandledError = (e) => reported.push(e);
    const outer: unknown[] = [];
    const boom = new Error('hook');
    const rec = record(
      fromIterable([1, 2, 3]).pipe(
        filter((x: number) => x === 3),
        onDiscard(() => {
          throw boom;
        }),
        onDiscard((v) => outer.push(v)),
      ),
    );
    rec.sub.request(Infinity);
    expect(rec.values).toEqual([3]);
    expect(rec.completed).toBe(1);
    expect(outer).toEqual([1, 2]);
    await new Promise((r) => setTimeout(r, 5));
    expect(reported).toEqual([boom, boom]);
  });
});

describe('onDiscard typing', () => {
  it('fits any position of pipe and accepts a typed hook', () => {
    const seen: number[] = [];
    const rec = record(
      fromIterable([1, 2, 3]).pipe(
        onDiscard<number>((v) => seen.push(v)),
        filter((x: number) => x > 1),
        onDiscard((v: unknown) => seen.push(Number(v))),
        limitRate(2),
      ),
    );
    rec.sub.request(5);
    const values: number[] = rec.values;
    expect(values).toEqual([2, 3]);
    expect(seen).toEqual([1]); // only the hook downstream of filter sees its discard
  });
});
