import { z } from 'zod';
import { MAX_TIMER_MS } from '../../flow/operators/operator-subscriber';

/** A zod integer of at least `min`. */
export const int = (min: number): z.ZodNumber => z.number().int().min(min);

/**
 * A duration a timer waits, ms: an integer of at least `min` and at most 2^31 − 1 (~24.8 days),
 * the longest `setTimeout` Node keeps (a longer one fires after 1 ms).
 */
export const ms = (min: number): z.ZodNumber => int(min).max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} ms (~24.8 days, the longest timer Node keeps)`);

/** An HTTP header name (RFC 9110 token), lower-cased. */
export const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'not an HTTP header name')
  .transform((s) => s.toLowerCase());

/**
 * An absolute `http:` or `https:` URL: the only schemes the upstream client speaks. Refused at
 * start, so a base written without its scheme (`localhost:11434`, which parses as a URL of
 * scheme `localhost:`) is named there rather than failing every request.
 */
export const httpUrl = z
  .string()
  // One message for every value that is not such a URL: `127.0.0.1:8000` (no URL at all) and
  // `localhost:8000` (a URL of another scheme) are the same mistake.
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), { error: (issue) => `expected an http:// or https:// URL, got ${JSON.stringify(issue.input)}` });
