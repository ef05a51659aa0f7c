import { filter, map, take } from 'rxjs';
import { PassThrough } from 'node:stream';
import { createFlow, fromIterable, fromReadable, Flow } from '../../src/flow';
import { limitRate, limitRequest, onBackpressureBuffer } from '../../src';

describe('Flow core', () => {
  it('emits nothing before the first request and never more than requested', () => {
    const seen: number[] = [];
    const sub = fromIterable([1, 2, 3, 4]).subscribeWithDemand({ next: (v) => seen.push(v) });
    expect(seen).toEqual([]);
    sub.request(2);
    expect(seen).toEqual([1, 2]);
    sub.request(1);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('completes right after the last element without extra demand', () => {
    let completed = false;
    fromIterable([1, 2]).subscribeWithDemand({ complete: () => (completed = true) }).request(2);
    expect(completed).toBe(true);
  });

  it('signals RangeError citing rule 3.9 on request(0) and cancels upstream', () => {
    let cancelled = false;
    let error: unknown;
    const flow = createFlow<number>((sink) => {
      sink.onCancel(() => (cancelled = true));
    });
    flow.subscribeWithDemand({ error: (e) => (error = e) }).request(0);
    expect(error).toBeInstanceOf(RangeError);
    expect(String((error as Error).message)).toMatch(/3\.9/);
    expect(cancelled).toBe(true);
  });

  it('plain RxJS subscribe means unbounded demand', () => {
    const seen: number[] = [];
    fromIterable([1, 2, 3]).subscribe((v) => seen.push(v));
    expect(seen).toEqual([1, 2, 3]);
  });

  it('lifts RxJS map and filter, replenishing demand for filtered elements', () => {
    const requests: number[] = [];
    const src = createFlow<number>((sink) => {
      let i = 0;
      sink.onRequest((n) => {
        requests.push(n);
        for (let k = 0; k < n; k++) sink.next(i++);
      });
    });
    const seen: number[] = [];
    const out: Flow<number> = src.pipe(
      filter((x: number) => x % 2 === 0),
      map((x: number) => x * 10),
    );
    out.subscribeWithDemand({ next: (v) => seen.push(v) }).request(3);
    expect(seen).toEqual([0, 20, 40]);
  });

  it('types a chain of nine operators, Flow and lifted RxJS mixed, end to end', () => {
    const seen: number[] = [];
    // Typed overloads go up to nine operators (as RxJS's do); beyond that the result is Flow<unknown>.
    const out: Flow<number> = fromIterable([1, 2, 3, 4, 5, 6]).pipe(
      filter((x: number) => x % 2 === 0),
      map((x: number) => x * 10),
      limitRate(4),
      onBackpressureBuffer(),
      map((x: number) => String(x)),
      limitRequest(2),
      map((s: string) => s.length),
      limitRate(1),
      filter((n: number) => n > 0),
    );
    out.subscribeWithDemand({ next: (v) => seen.push(v) }).request(10);
    expect(seen).toEqual([2, 2]);
  });

  it('a lifted take completes and cancels upstream', () => {
    let cancelled = false;
    const src = createFlow<number>((sink) => {
      sink.onCancel(() => (cancelled = true));
      sink.onRequest((n) => {
        for (let k = 0; k < Math.min(n, 10); k++) sink.next(k);
      });
    });
    let done = false;
    src.pipe(take(2)).subscribeWithDemand({ complete: () => (done = true) }).request(5);
    expect(done).toBe(true);
    expect(cancelled).toBe(true);
  });

  it('fromReadable pauses the stream while demand is 0', async () => {
    const body = new PassThrough();
    const got: string[] = [];
    const sub = fromReadable<Buffer>(body).subscribeWithDemand({ next: (c) => got.push(c.toString()) });
    body.write('a');
    body.write('b');
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual([]);
    expect(body.isPaused()).toBe(true);
    sub.request(1);
    await new Promise((r) => setImmediate(r));
    expect(got.join('')).toMatch(/^a/);
    sub.cancel();
    expect(body.destroyed).toBe(true);
  });

  it('fromReadable delivers what a failed stream had buffered, as demand allows, then the error', async () => {
    const body = new PassThrough();
    const got: string[] = [];
    let error: unknown;
    const sub = fromReadable<Buffer>(body).subscribeWithDemand({ next: (c) => got.push(c.toString()), error: (e) => (error = e) });
    body.write('before ');
    body.write('the reset');
    await new Promise((r) => setImmediate(r));
    body.destroy(new Error('ECONNRESET'));
    await new Promise((r) => setImmediate(r));
    expect(error).toBeUndefined(); // no demand yet: the bytes wait, and the error behind them
    sub.request(Infinity);
    expect(got.join('')).toBe('before the reset');
    expect((error as Error).message).toBe('ECONNRESET');
  });
});
