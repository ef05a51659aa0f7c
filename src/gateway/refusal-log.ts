import type { Logger } from './logger';

/** Most `refused` lines one {@link RefusalLog} writes per second; past them refusals are counted. */
export const REFUSAL_LINES_PER_SECOND = 10;

/** The window {@link REFUSAL_LINES_PER_SECOND} counts in, ms. */
const WINDOW_MS = 1000;

/** What one `refused` line says (see `docs/gateway.md`, Logs). */
export interface RefusalFields {
  /** The request's path (at most 200 characters). */
  readonly route: string;
  readonly method: string;
  /** The status answered (503, 429, 413, 408, 415, 405, 404, …), 499 when the answer could no longer be written. */
  readonly status: number;
  readonly errorCode: string;
  /** The `reason` label of `tidegate_admission_refusals_total`. */
  readonly reason: string;
  /** The drain's refusals: whether the request's whole body had arrived. */
  readonly bodyComplete?: boolean | undefined;
}

/**
 * Writes one `refused` line per refusal, at most `linesPerSecond` in a second: a flood of
 * refused requests (the very moment the caps exist for) costs a few lines a second, not one per
 * request. Refusals past the cap are counted by `errorCode` and written as one
 * `refusals suppressed` line (`count`, `byCode`, `windowMs`) when their window ends, or at
 * {@link flush}. The metrics count every refusal either way.
 *
 * Timers: at most one, unref'd, pending while suppressed refusals wait for their summary.
 *
 * @example
 * const refusals = new RefusalLog(logger);
 * refusals.log({ route: '/v1/chat/completions', method: 'POST', status: 503, errorCode: 'ERR_TIDEGATE_OVER_CAPACITY', reason: 'streams' });
 */
export class RefusalLog {
  private windowStart = -Infinity;
  private written = 0;
  private suppressed = 0;
  private byCode: Record<string, number> = {};
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param logger where lines go (level `info`, as the drain's `refused` lines)
   * @param linesPerSecond lines written per window before refusals are only counted
   * @param now the clock, ms (tests inject one)
   */
  constructor(
    private readonly logger: Logger,
    private readonly linesPerSecond = REFUSAL_LINES_PER_SECOND,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Logs one refusal, or counts it when this window already has its lines. */
  log(fields: RefusalFields): void {
    const t = this.now();
    if (t - this.windowStart >= WINDOW_MS) {
      this.flush();
      this.windowStart = t;
      this.written = 0;
    }
    if (this.written < this.linesPerSecond) {
      this.written++;
      this.logger.info('refused', { ...fields, route: fields.route.slice(0, 200) });
      return;
    }
    this.suppressed++;
    this.byCode[fields.errorCode] = (this.byCode[fields.errorCode] ?? 0) + 1;
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), Math.max(0, this.windowStart + WINDOW_MS - t));
      this.timer.unref();
    }
  }

  /** Writes the `refusals suppressed` line of the refusals counted so far, if any, and clears the timer. */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.suppressed === 0) return;
    this.logger.info('refusals suppressed', { count: this.suppressed, byCode: this.byCode, windowMs: WINDOW_MS });
    this.suppressed = 0;
    this.byCode = {};
  }
}
