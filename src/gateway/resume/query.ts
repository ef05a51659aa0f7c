import type { Request } from 'express';
import { ResumeRequestError } from './errors';

/**
 * The one value of the query parameter `name`, `undefined` when absent.
 *
 * Express' query parser gives an array for a repeated parameter (`after=1&after=2`), and, with
 * the `extended` parser, an array or an object for `after[]=1` or `after[k]=1`; the default
 * `simple` parser keeps `after[]` as a key of its own, which would read as no `after` at all and
 * replay from the start. Each of these is refused rather than guessed at.
 *
 * @param req the request whose query is read
 * @param name the parameter, e.g. `after`
 * @throws {ResumeRequestError} (400 `ERR_TIDEGATE_BAD_REQUEST`) when `name` came as anything but one plain value
 */
export function singleQueryValue(req: Request, name: string): string | undefined {
  const query = req.query as Record<string, unknown>;
  const value = query[name];
  const bracketed = Object.keys(query).some((key) => key.startsWith(`${name}[`));
  if (bracketed || (value !== undefined && typeof value !== 'string')) {
    throw new ResumeRequestError(`${name} must be given once, as a single value (not repeated, not ${name}[])`);
  }
  return value as string | undefined;
}
