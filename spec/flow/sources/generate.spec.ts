import { generate, IllegalSinkStateError, onBackpressureBuffer, onDiscard } from '../../../src/flow';
import type { FlowSubscription } from '../../../src/flow/types';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('generate: one generator call per requested element', () => {
  it('calls the generator only for requested elements, in order', () => {
    let calls = 0;
    const seen: number[] = [];
    const sub = generate<number>((sink) => sink.next(calls++)).subscribeWithDemand({ next: (v) => seen.push(v) });
    expect(calls).toBe(0);
    sub.request(2);
    expect(seen).toEqual([0, 1]);
    sub.request(3);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(calls).toBe(5);
    sub.cancel();
  });

  it('threads the state and hands the last one to stateConsumer once, at completion', () => {
    const seen: string[] = [];
    const consumed: number[] = [];
    let completed = 0;
    generate<string, number>(
      () => 1,
      (n, sink) => {
        if (n > 3) sink.complete();
        else sink.next(`#${n}`);
        return n + 1;
      },
      { stateConsumer: (s) => consumed.push(s) },
    ).subscribeWithDemand({ onSubscribe: (s) => s.request(10), next: (v) => seen.push(v), complete: () => completed++ });
    expect(seen).toEqual(['#1', '#2', '#3']);
    expect(completed).toBe(1);
    expect(consumed).toEqual([5]);
  });

  it('runs the state supplier once per subscription', () => {
    let supplied = 0;
    const flow = generate<number, number>(
      () => ++supplied * 100,
      (s, sink) => {
        sink.next(s);
        sink.complete();
        return s;
      },
    );
    const seen: number[] = [];
    flow.subscribeWithDemand({ onSubscribe: (s) => s.request(1), next: (v) => seen.push(v) });
    flow.subscribeWithDemand({ onSubscribe: (s) => s.request(1), next: (v) => seen.push(v) });
    expect(seen).toEqual([100, 200]);
  });

  it('a call that emits nothing is followed by another call, demand unchanged', () => {
    let calls = 0;
    const seen: number[] = [];
    generate<number>((sink) => {
      calls++;
      if (calls % 3 === 0) sink.next(calls);
    }).subscribeWithDemand({ onSubscribe: (s) => s.request(2), next: (v) => seen.push(v) });
    expect(seen).toEqual([3, 6]);
    expect(calls).toBe(6);
  });
});

describe('generate: sink misuse and errors', () => {
  it('next twice in one call signals IllegalSinkStateError and discards the second value', () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const discarded: unknown[] = [];
    const consumed: unknown[] = [];
    generate<number, string>(
      () => 's',
      (s, sink) => {
        sink.next(1);
        sink.next(2);
        return s;
      },
      { stateConsumer: (s) => consumed.push(s) },
    )
      .pipe(onDiscard((v) => discarded.push(v)))
      .subscribeWithDemand({ onSubscribe: (s) => s.request(5), next: (v) => seen.push(v), error: (e) => errors.push(e) });
    expect(seen).toEqual([1]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(IllegalSinkStateError);
    expect((errors[0] as IllegalSinkStateError).code).toBe('ERR_TIDEGATE_ILLEGAL_STATE');
    expect((errors[0] as Error).message).toMatch(/more than one call to next/i);
    expect(discarded).toEqual([2]);
    expect(consumed).toEqual(['s']);
  });

  it('a throwing generator terminates the flow with its error', () => {
    const boom = new Error('boom');
    const errors: unknown[] = [];
    let consumed = 0;
    generate<number>(
      () => {
        throw boom;
      },
      { stateConsumer: () => consumed++ },
    ).subscribeWithDemand({ onSubscribe: (s) => s.request(1), error: (e) => errors.push(e) });
    expect(errors).toEqual([boom]);
    expect(consumed).toBe(1);
  });

  it('a throwing state supplier signals its error at subscription', () => {
    const boom = new Error('no state');
    const errors: unknown[] = [];
    let calls = 0;
    generate<number, number>(
      () => {
        throw boom;
      },
      (s) => {
        calls++;
        return s;
      },
    ).subscribeWithDemand({ onSubscribe: (s) => s.request(1), error: (e) => errors.push(e) });
    expect(errors).toEqual([boom]);
    expect(calls).toBe(0);
  });

  it('rejects a non-function generator and a bad sliceSize when built', () => {
    expect(() => generate(42 as unknown as () => void)).toThrow(TypeError);
    for (const sliceSize of [0, -1, 1.5, NaN, Infinity]) {
      expect(() => generate<number>((sink) => sink.next(1), { sliceSize })).toThrow(RangeError);
    }
  });
});

describe('generate: unbounded demand never starves the event loop', () => {
  it('under request(Infinity) it emits sliceSize elements per turn and lets timers run between', async () => {
    let emitted = 0;
    const sub = generate<number>((sink) => sink.next(emitted++), { sliceSize: 100 }).subscribeWithDemand({});
    sub.request(Infinity);
    expect(emitted).toBe(100); // the first slice, synchronously
    await turn();
    expect(emitted).toBe(200); // one slice per setImmediate turn
    let timerRan = false;
    setTimeout(() => (timerRan = true), 1);
    const started = Date.now();
    while (!timerRan && Date.now() - started < 1000) await turn();
    expect(timerRan).toBe(true); // an endless source does not starve the timers phase
    const atTimer = emitted;
    await turn();
    expect(emitted).toBeGreaterThan(atTimer); // and it goes on after the timer ran
    sub.cancel();
    const atCancel = emitted;
    await turn();
    await turn();
    expect(emitted).toBe(atCancel); // the pending continuation was cleared
  });

  it('an endless generator into onBackpressureBuffer overflows, is cancelled and stops', async () => {
    let emitted = 0;
    let consumed = 0;
    const errors: unknown[] = [];
    generate<number, number>(
      () => 0,
      (n, sink) => {
        emitted++;
        sink.next(n);
        return n + 1;
      },
      { stateConsumer: () => consumed++ },
    )
      .pipe(onBackpressureBuffer<number>({ maxItems: 1000, overflow: 'terminate' }))
      .subscribeWithDemand({ error: (e) => errors.push(e) });
    // The downstream requests nothing; the buffer requests Infinity.
    await sleep(20);
    expect(errors).toHaveLength(1);
    expect((errors[0] as { code?: string }).code).toBe('ERR_TIDEGATE_OVERFLOW');
    expect(consumed).toBe(1);
    const atError = emitted;
    await sleep(20);
    expect(emitted).toBe(atError);
    expect(emitted).toBeLessThanOrEqual(1001);
  });

  it('request(1) inside next over 1e5 elements completes without deep recursion, yielding between slices', async () => {
    let count = 0;
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      await new Promise<void>((resolve, reject) => {
        const sub: FlowSubscription = generate<number, number>(
          () => 0,
          (n, sink) => {
            if (n === 100_000) sink.complete();
            else sink.next(n);
            return n + 1;
          },
        ).subscribeWithDemand({
          next: () => {
            count++;
            sub.request(1);
          },
          error: reject,
          complete: resolve,
        });
        sub.request(1);
      });
    } finally {
      clearInterval(ticker);
    }
    expect(count).toBe(100_000);
    expect(turns).toBeGreaterThan(0);
  });

  it('cancel inside next stops the generator and consumes the state once', () => {
    let calls = 0;
    let consumed = 0;
    const sub: FlowSubscription = generate<number>(
      (sink) => sink.next(++calls),
      { stateConsumer: () => consumed++ },
    ).subscribeWithDemand({ next: (v) => v === 3 && sub.cancel() });
    sub.request(Infinity);
    expect(calls).toBe(3);
    expect(consumed).toBe(1);
  });
});
