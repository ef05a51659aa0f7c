/**
 * timerScheduler (src/flow/timer-scheduler.ts) on real timers: the asyncScheduler contract the
 * timeout operators rely on (delay, state, rescheduling from the work, cancel), and an idle
 * timeout run on it.
 */
import type { SchedulerAction } from 'rxjs';
import { TimeoutError } from '../../src/errors';
import { idleTimeout } from '../../src/flow';
import { timerScheduler } from '../../src/flow/timer-scheduler';
import { TestPublisher, record } from './operators/test-publisher';
import { waitFor } from '../harness/net';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('timerScheduler', () => {
  it('runs the work once after its delay with its state', async () => {
    const runs: { state: string | undefined; afterMs: number }[] = [];
    const t0 = timerScheduler.now();
    timerScheduler.schedule<string>((state) => runs.push({ state, afterMs: timerScheduler.now() - t0 }), 30, 'x');
    await sleep(10);
    expect(runs).toEqual([]);
    await sleep(80);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.state).toBe('x');
    expect(runs[0]?.afterMs).toBeGreaterThanOrEqual(29);
  });

  it('lets the work schedule itself again with a new state, until unsubscribed', async () => {
    const seen: number[] = [];
    const action = timerScheduler.schedule<number>(
      function (this: SchedulerAction<number>, n?: number) {
        seen.push(n as number);
        this.schedule((n as number) + 1, 5);
      },
      5,
      0,
    );
    // However slow the machine: three runs, each from the one before, then none after unsubscribe.
    await waitFor(() => seen.length >= 3);
    action.unsubscribe();
    const count = seen.length;
    expect(seen).toEqual(seen.map((_, i) => i));
    await sleep(40);
    expect(seen.length).toBe(count);
    expect(action.closed).toBe(true);
  });

  it('never runs work unsubscribed before its delay', async () => {
    let ran = false;
    timerScheduler.schedule(() => (ran = true), 20).unsubscribe();
    await sleep(60);
    expect(ran).toBe(false);
  });

  it('drives idleTimeout: the silence after an element with demand outstanding fails the flow', async () => {
    const pub = new TestPublisher<string>();
    const rec = record(pub.flow.pipe(idleTimeout<string>(300, timerScheduler)));
    rec.sub.request(5);
    pub.next('a');
    await sleep(200);
    pub.next('b'); // moves the deadline 300 ms past it
    await sleep(150);
    expect(rec.errors).toEqual([]);
    await sleep(400);
    expect(rec.values).toEqual(['a', 'b']);
    expect(rec.errors).toHaveLength(1);
    expect(rec.errors[0]).toBeInstanceOf(TimeoutError);
    expect(pub.cancelled).toBe(true);
  });
});
