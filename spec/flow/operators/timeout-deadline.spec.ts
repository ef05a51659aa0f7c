/**
 * The timeout operators' deadline is `NaN` when disarmed
 * (src/flow/operators/timeout-subscriber.ts). Disarm, re-arm, cancel, Infinity, the
 * largest timer, and elements at the deadline, on a virtual clock.
 */
import { TestScheduler } from 'rxjs/testing';
import { TimeoutError } from '../../../src/errors';
import { firstTimeout, idleTimeout, totalTimeout } from '../../../src/flow';
import { MAX_TIMER_MS } from '../../../src/flow/operators/operator-subscriber';
import { TestPublisher, record } from './test-publisher';

function scheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
}

describe('timeout deadline while disarmed', () => {
  // (Re-armed by a request after a disarm: spec/flow/operators/timeouts.spec.ts, 'restarts the full deadline when demand comes back'.)
  it('idleTimeout re-armed before the disarmed timer fired moves that timer to the new deadline', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(1);
      ts.schedule(() => pub.next('a'), 10); // disarmed, the action for 40 still scheduled
      ts.schedule(() => rec.sub.request(1), 20); // deadline 50
      ts.flush();
      expect(at).toBe(50);
    });
  });

  it('idleTimeout with no demand left is disarmed for good: no error however long the silence', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)));
      rec.sub.request(2);
      ts.schedule(() => pub.next('a'), 10);
      ts.schedule(() => pub.next('b'), 39);
      ts.schedule(() => undefined, 10_000);
      ts.flush();
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toEqual([]);
      expect(ts.actions.length).toBe(0);
    });
  });

  it('an element at the deadline that runs after the timer is too late', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(idleTimeout<string>(30, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(5);
      ts.schedule(() => pub.next('a'), 29); // deadline 59
      // Scheduled (at 40) after the timer rescheduled itself (at 30) for 59: runs after it, too late.
      ts.schedule(() => ts.schedule(() => pub.next('b'), 19), 40);
      ts.flush();
      expect(rec.values).toEqual(['a']);
      expect(at).toBe(59);
      expect(pub.cancelled).toBe(true);
    });
  });

  it('cancel while armed removes the scheduled action and signals nothing', () => {
    const ts = scheduler();
    ts.run(() => {
      for (const op of [idleTimeout<string>(30, ts), firstTimeout<string>(30, ts), totalTimeout<string>(30, ts)]) {
        const pub = new TestPublisher<string>();
        const rec = record(pub.flow.pipe(op));
        rec.sub.request(1);
        pub.next('a'); // idle, first: disarmed, the lazy action still scheduled; total: still armed
        rec.sub.request(1);
        expect(ts.actions.length).toBeGreaterThan(0);
        rec.sub.cancel();
        expect(ts.actions.length).toBe(0);
        ts.flush();
        expect(rec.errors).toEqual([]);
      }
    });
  });

  it('Infinity never arms: no action scheduled, no error', () => {
    const ts = scheduler();
    ts.run(() => {
      for (const op of [idleTimeout<string>(Infinity, ts), firstTimeout<string>(Infinity, ts), totalTimeout<string>(Infinity, ts)]) {
        const pub = new TestPublisher<string>();
        const rec = record(pub.flow.pipe(op));
        rec.sub.request(2);
        pub.next('a');
        expect(ts.actions.length).toBe(0);
        ts.flush();
        expect(rec.errors).toEqual([]);
        rec.sub.cancel();
      }
    });
  });

  it('the largest timer (MAX_TIMER_MS) fires exactly then, after re-arms', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      let at = -1;
      const rec = record(pub.flow.pipe(idleTimeout<string>(MAX_TIMER_MS, ts)), { error: () => (at = ts.now()) });
      rec.sub.request(3);
      ts.schedule(() => pub.next('a'), 1000);
      ts.schedule(() => pub.next('b'), 2000);
      ts.flush();
      expect(at).toBe(2000 + MAX_TIMER_MS);
      expect(rec.errors[0]).toBeInstanceOf(TimeoutError);
    });
  });

  it('totalTimeout completes before its deadline leave no action; one completing after it errors at the deadline', () => {
    const ts = scheduler();
    ts.run(() => {
      const early = new TestPublisher<string>();
      const a = record(early.flow.pipe(totalTimeout<string>(50, ts)));
      a.sub.request(1);
      ts.schedule(() => early.complete(), 49);
      const late = new TestPublisher<string>();
      let at = -1;
      const b = record(late.flow.pipe(totalTimeout<string>(50, ts)), { error: () => (at = ts.now()) });
      b.sub.request(1);
      ts.schedule(() => late.complete(), 51);
      ts.flush();
      expect(a.completed).toBe(1);
      expect(a.errors).toEqual([]);
      expect(b.completed).toBe(0);
      expect(at).toBe(50);
    });
  });

  it('firstTimeout disarmed by the first element never fires, even when the element came at deadline - 1', () => {
    const ts = scheduler();
    ts.run(() => {
      const pub = new TestPublisher<string>();
      const rec = record(pub.flow.pipe(firstTimeout<string>(50, ts)));
      rec.sub.request(2);
      ts.schedule(() => pub.next('a'), 49);
      ts.schedule(() => pub.next('b'), 5000);
      ts.flush();
      expect(rec.values).toEqual(['a', 'b']);
      expect(rec.errors).toEqual([]);
      expect(ts.actions.length).toBe(0);
    });
  });
});
