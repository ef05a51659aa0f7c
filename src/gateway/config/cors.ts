import { z } from 'zod';
import { ms } from './fields';

/**
 * The `cors` section: which browser origins may call the gateway. Off by default (no origins:
 * no `Access-Control-*` header is sent and `OPTIONS` is not answered).
 */
export const corsSchema = z
  .object({
    /**
     * Origins allowed, exactly as browsers send them (`https://app.example.com`, scheme and port
     * included), or `*` for any origin. Empty: CORS off.
     */
    origins: z.array(z.union([z.literal('*'), z.string().url().transform((u) => new URL(u).origin)])).default([]),
    /** Let the page send cookies and HTTP auth (`Access-Control-Allow-Credentials: true`); with `*` the request's origin is echoed. */
    credentials: z.boolean().default(false),
    /** How long a browser may cache a preflight answer, ms (`Access-Control-Max-Age`, in whole seconds). */
    maxAgeMs: ms(0).default(600_000),
  })
  .strict()
  .prefault({});

/** The `cors` section, validated. */
export type CorsSettings = z.infer<typeof corsSchema>;
