import { backoffDelayMs } from '../../src/http/backoff';

describe('backoffDelayMs', () => {
  const base = { baseMs: 100, maxDelayMs: 1000 };

  it('draws from the full window [0, base * 2^(attempt-1)) (full jitter)', () => {
    expect(backoffDelayMs({ ...base, attempt: 1, random: () => 0 })).toBe(0);
    expect(backoffDelayMs({ ...base, attempt: 1, random: () => 0.999 })).toBe(99);
    expect(backoffDelayMs({ ...base, attempt: 3, random: () => 0.5 })).toBe(200);
  });

  it('caps the window at maxDelayMs', () => {
    expect(backoffDelayMs({ ...base, attempt: 30, random: () => 0.5 })).toBe(500);
    expect(backoffDelayMs({ ...base, attempt: 10_000, random: () => 0.5 })).toBe(500);
  });

  it('never waits less than Retry-After', () => {
    expect(backoffDelayMs({ ...base, attempt: 1, random: () => 0, retryAfterMs: 2000 })).toBe(2000);
    expect(backoffDelayMs({ ...base, attempt: 5, random: () => 0.999, retryAfterMs: 10 })).toBe(999);
  });
});
