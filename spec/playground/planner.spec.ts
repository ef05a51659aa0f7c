import { planCapacity } from '../../src/playground';

describe('planCapacity', () => {
  const base = { heapBytes: 512 * 1024 * 1024, streams: 1000, eventBytes: 180, overheadFactor: 2, producerEventsPerSec: 300, consumerBytesPerSec: 4096 };

  it('gives n = floor(M / (C × S × k)) events per stream and n × S budget bytes', () => {
    const plan = planCapacity(base);
    expect(plan.eventsPerStream).toBe(Math.floor((512 * 1024 * 1024) / (1000 * 180 * 2)));
    expect(plan.budgetBytes).toBe(plan.eventsPerStream * 180);
  });

  it('gives the seconds the budget absorbs the rate gap', () => {
    const plan = planCapacity(base);
    expect(plan.gapBytesPerSec).toBe(300 * 180 - 4096);
    expect(plan.absorbSeconds).toBeCloseTo(plan.budgetBytes / (300 * 180 - 4096), 9);
  });

  it('absorbs forever when the consumer keeps up', () => {
    expect(planCapacity({ ...base, consumerBytesPerSec: 1_000_000 }).absorbSeconds).toBe(Infinity);
  });

  it('refuses a non-positive size or count', () => {
    expect(() => planCapacity({ ...base, streams: 0 })).toThrow(RangeError);
  });
});
