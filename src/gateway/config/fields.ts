import { z } from 'zod';

/** A zod integer of at least `min`. */
export const int = (min: number): z.ZodNumber => z.number().int().min(min);

/** An HTTP header name (RFC 9110 token), lower-cased. */
export const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'not an HTTP header name')
  .transform((s) => s.toLowerCase());
