/**
 * Per-request settings from the `x-sim-*` headers: which transcript, fault, fault position,
 * rate, time to first token and UTF-8 splitting one request gets. A bad header value raises a
 * {@link RequestError} with status 400; with `allowHeaderOverrides` off the headers are ignored.
 */
import type * as http from 'node:http';
import { parseFault, SimFault } from './faults';
import { RequestError } from './request-error';
import type { Settings } from './settings';

/** The settings of one request after its headers were applied. */
export interface RequestOverrides {
  /** `x-sim-transcript`, if sent. */
  transcript?: string;
  fault: SimFault;
  faultAfterTokens: number;
  tokensPerSecond: number;
  ttftMs: number;
  splitUtf8: boolean;
}

/** The first value of request header `name` (lower case). */
function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Applies the request's `x-sim-*` headers over `s`. Throws {@link RequestError} (400). */
export function readOverrides(req: http.IncomingMessage, s: Settings): RequestOverrides {
  const out = {
    transcript: undefined as string | undefined,
    fault: s.fault,
    faultAfterTokens: s.faultAfterTokens,
    tokensPerSecond: s.tokensPerSecond,
    ttftMs: s.ttftMs,
    splitUtf8: s.splitUtf8,
  };
  if (!s.allowHeaderOverrides) return out;
  out.transcript = header(req, 'x-sim-transcript');
  const fault = header(req, 'x-sim-fault');
  if (fault !== undefined) {
    const f = parseFault(fault);
    if (f === undefined) throw new RequestError(400, `unknown x-sim-fault ${JSON.stringify(fault)}`);
    out.fault = f;
  }
  const num = (name: string, min: number, allowInfinity: boolean): number | undefined => {
    const v = header(req, name);
    if (v === undefined) return undefined;
    const n = allowInfinity && /^infinity$/i.test(v.trim()) ? Infinity : Number(v);
    if (v.trim() === '' || Number.isNaN(n) || n < min || (!allowInfinity && !Number.isFinite(n))) {
      throw new RequestError(400, `bad ${name} ${JSON.stringify(v)}`);
    }
    return n;
  };
  out.faultAfterTokens = num('x-sim-fault-after', 0, false) ?? out.faultAfterTokens;
  out.ttftMs = num('x-sim-ttft-ms', 0, false) ?? out.ttftMs;
  const tps = num('x-sim-tokens-per-second', Number.MIN_VALUE, true);
  if (tps !== undefined) out.tokensPerSecond = tps;
  const split = header(req, 'x-sim-split-utf8');
  if (split !== undefined) out.splitUtf8 = /^(1|true|yes)$/i.test(split.trim());
  return out;
}
