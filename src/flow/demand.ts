/** Demand arithmetic shared by every stage (Reactor `Operators.addCap`, `Operators.validate`). */

/** The unbounded-demand sentinel (Reactor's `Long.MAX_VALUE`). */
export const UNBOUNDED = Infinity;

/**
 * Adds two demands, saturating at {@link UNBOUNDED}: a sum at or past
 * `Number.MAX_SAFE_INTEGER` is no longer exact in a JS number, so it becomes `Infinity`.
 * Mirrors Reactor `Operators.addCap(long, long)`.
 */
export function addDemand(a: number, b: number): number {
  const sum = a + b;
  return sum >= Number.MAX_SAFE_INTEGER ? UNBOUNDED : sum;
}

/** Normalises one valid request amount: huge integers become {@link UNBOUNDED}. */
export function normalizeRequest(n: number): number {
  return n >= Number.MAX_SAFE_INTEGER ? UNBOUNDED : n;
}

/** True when `n` is a legal `request(n)` amount: a positive integer or `Infinity`. */
export function isValidRequest(n: unknown): n is number {
  return typeof n === 'number' && n > 0 && (n === UNBOUNDED || Number.isInteger(n));
}

/**
 * The error a rule-3.9 violation signals. Mirrors Reactor's
 * `Exceptions.nullOrNegativeRequestException` message.
 */
export function rule39Error(n: unknown): RangeError {
  return new RangeError(
    `Reactive Streams rule 3.9 violated: request(n) requires a positive integer or Infinity, got ${String(n)}`,
  );
}
