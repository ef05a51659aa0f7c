import { ByteBudget } from '../../src/flow/budget';

describe('ByteBudget', () => {
  it('refuses what would exceed maxBytes and takes nothing', () => {
    const budget = new ByteBudget(100);
    expect(budget.tryAcquire(60)).toBe(true);
    expect(budget.tryAcquire(41)).toBe(false);
    expect(budget.used).toBe(60);
    budget.release(60);
    expect(budget.used).toBe(0);
  });

  it("records the bytes held when it refuses, external holders' included, as its peak", () => {
    const budget = new ByteBudget(1000);
    let socket = 0;
    budget.attachExternal(() => socket);
    expect(budget.tryAcquire(100)).toBe(true);
    expect(budget.peak).toBe(100);
    socket = 850;
    expect(budget.tryAcquire(100)).toBe(false);
    expect(budget.peak).toBe(950);
    expect(budget.used).toBe(950);
  });

  it('fits() says whether an element fits beside the reserve, takes nothing, and records the peak either way', () => {
    const budget = new ByteBudget(1000);
    let socket = 0;
    budget.attachExternal(() => socket);
    expect(budget.fits(600, 100)).toBe(true);
    expect(budget.used).toBe(0);
    expect(budget.peak).toBe(600);
    socket = 800;
    expect(budget.fits(150, 100)).toBe(false); // 800 + 150 > 1000 − 100
    expect(budget.peak).toBe(800);
    expect(budget.fits(150)).toBe(true);
    expect(budget.peak).toBe(950);
  });
});
