/**
 * A failure the simulator injects into a response, chosen per request with the
 * `x-sim-fault` header or for every request with the `fault` option.
 *
 * - `none`: a normal response.
 * - `error-midstream`: after `faultAfterTokens` tokens, the route's mid-stream error frame
 *   (Chat and legacy Completions `data: {"error":{…server_error…}}`; Responses `event: error`
 *   `insufficient_quota` then `response.failed`; Anthropic `event: error` overloaded_error), then
 *   a clean end with no terminator (`[DONE]` / `response.completed` / `message_stop`).
 * - `truncate`: after `faultAfterTokens` tokens, a clean end with no finish frames and no terminator.
 * - `reset`: after `faultAfterTokens` tokens, the socket is destroyed with a TCP RST.
 * - `stall`: after `faultAfterTokens` tokens, nothing more until the client leaves (idle timeouts).
 * - `hang`: status and headers, then nothing until the client leaves (first-byte timeouts).
 * - `status:<code>`: an immediate HTTP error with a JSON body in the provider's shape; 429, 503
 *   and 529 carry `Retry-After` (seconds, the `retryAfterSeconds` option).
 */
export type SimFault =
  | 'none'
  | 'error-midstream'
  | 'truncate'
  | 'reset'
  | 'stall'
  | 'hang'
  | `status:${number}`;

const NAMED: readonly string[] = ['none', 'error-midstream', 'truncate', 'reset', 'stall', 'hang'];

/**
 * Parses a fault name (case-insensitive, surrounding spaces ignored).
 * @returns the fault, or `undefined` when `value` names none (status codes must be 400–599).
 */
export function parseFault(value: string): SimFault | undefined {
  const v = value.trim().toLowerCase();
  if (NAMED.includes(v)) return v as SimFault;
  const m = /^status:(\d{3})$/.exec(v);
  if (m) {
    const code = Number(m[1]);
    if (code >= 400 && code <= 599) return `status:${code}`;
  }
  return undefined;
}

/** The HTTP status of a `status:<code>` fault, else `undefined`. */
export function faultStatus(fault: SimFault): number | undefined {
  return fault.startsWith('status:') ? Number(fault.slice('status:'.length)) : undefined;
}
