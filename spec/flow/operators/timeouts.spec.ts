import { TestScheduler } from 'rxjs/testing';
import { TimeoutError } from '../../../src/errors';
import { createFlow, firstTimeout, idleTimeout, totalTimeout } from '../../../src/flow';
import { TestPublisher, record } from './test-publisher';

function scheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
}

describe('firstTimeout', () => {
  it('starts counting at the first request, not at subscription', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(firstTimeout<string>(50, ts)));
      ts.schedule(() => rec.sub.request(1), 100);
      ts.schedule(() => pub.next('a'), 140);
      ts.flush();
      expect(rec.values).toEqual(['a']);
      expect(rec.errors).toEqual([]);
    });
  });

  it('cancels the upstream and signals TimeoutError(first) when no element came in time', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(firstTimeout<string>(50, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(1);
      ts.schedule(() => pub.next('late'), 60);
      ts.flush();
      expect(at).toBe(50);
      expect(pub.cancelled).toBe(true);
      expect(rec.errors[0]).toBeInstanceOf(TimeoutError);
      expect(rec.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', kind: 'first', timeoutMs: 50 });
      expect(rec.values).toEqual([]);
    });
  });

  it('no longer applies after the first element', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(firstTimeout<string>(50, ts)));
      rec.sub.request(2);
      ts.schedule(() => pub.next('a'), 10);
      ts.schedule(() => pub.next('b'), 500);
      ts.flush();
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toEqual([]);
    });
  });

  it('throws RangeError at build time for ms <= 0 or NaN', () => {
    expect(() => firstTimeout(0)).toThrow(RangeError);
    expect(() => firstTimeout(NaN)).toThrow(RangeError);
    expect(() => idleTimeout(-1)).toThrow(RangeError);
    expect(() => totalTimeout(2 ** 31)).toThrow(RangeError);
  });
});

describe('idleTimeout', () => {
  it('signals TimeoutError(idle) when the gap between elements exceeds ms while demand is outstanding', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(5);
      ts.schedule(() => pub.next('a'), 10);
      ts.schedule(() => pub.next('b'), 35);
      ts.flush();
      expect(rec.values).toEqual(['a', 'b']);
      expect(at).toBe(65);
      expect(pub.cancelled).toBe(true);
      expect(rec.errors[0]).toMatchObject({ kind: 'idle', timeoutMs: 30 });
    });
  });

  it('does not count time while the consumer has no outstanding demand', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)));
      rec.sub.request(1);
      ts.schedule(() => pub.next('a'), 10); // demand now 0: a slow consumer
      ts.schedule(() => rec.sub.request(1), 500);
      ts.schedule(() => pub.next('b'), 520);
      ts.flush();
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toEqual([]);
    });
  });

  it('restarts the full deadline when demand comes back', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(1);
      ts.schedule(() => pub.next('a'), 10);
      ts.schedule(() => rec.sub.request(1), 500);
      ts.flush();
      expect(at).toBe(530);
    });
  });

  it('leaves the wait for the first element to firstTimeout', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)));
      rec.sub.request(1);
      ts.schedule(() => pub.next('a'), 300);
      ts.flush();
      expect(rec.values).toEqual(['a']);
      expect(rec.errors).toEqual([]);
    });
  });
});

describe('totalTimeout', () => {
  it('fails the stream ms after subscription, as a marble diagram', () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const source = createFlow<string>((sink) => {
        const s = cold('a-b-c-d|').subscribe({ next: (v) => sink.next(v), complete: () => sink.complete() });
        return () => s.unsubscribe();
      });
      expectObservable(source.pipe(totalTimeout<string>(3, ts))).toBe('a-b#', undefined, new TimeoutError('total', 3));
    });
  });

  it('disarms on completion', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(totalTimeout<string>(50, ts)));
      rec.sub.request(1);
      ts.schedule(() => pub.complete(), 10);
      ts.flush();
      expect(rec.completed).toBe(1);
      expect(rec.errors).toEqual([]);
    });
  });

  it('disarms on cancel', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(totalTimeout<string>(50, ts)));
      ts.schedule(() => rec.sub.cancel(), 10);
      ts.flush();
      expect(rec.errors).toEqual([]);
    });
  });
});
