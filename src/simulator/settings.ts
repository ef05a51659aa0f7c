/**
 * The simulator's settings: the defaults of every {@link SimulatorOptions} key, merging a
 * patch over them (from `createSimulator()` and `configure()`), the range checks that
 * throw `RangeError` before a bad value reaches a request, and the transcripts they make
 * available.
 */
import { parseFault } from './faults';
import { BUILTIN_TRANSCRIPTS, Transcript } from './transcripts';
import type { SimulatorOptions } from './types';

/** Every option resolved: the defaults with the caller's values merged over them. */
export type Settings = Required<Omit<SimulatorOptions, 'transcripts'>> & { transcripts: Readonly<Record<string, Transcript>> };

/** The documented default of every option. */
export const DEFAULTS: Settings = {
  tokensPerSecond: 50,
  ttftMs: 300,
  defaultTranscript: 'sim',
  transcripts: {},
  fault: 'none',
  faultAfterTokens: 3,
  retryAfterSeconds: 1,
  splitUtf8: false,
  splitDelayMs: 5,
  maxBodyBytes: 1024 * 1024,
  allowHeaderOverrides: true,
  maxRecords: 1000,
};

/** Merges `patch` over `base`, skipping keys whose value is `undefined`. */
export function mergeSettings(base: Settings, patch: SimulatorOptions): Settings {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) out[k] = v;
  return out as Settings;
}

/** Throws `RangeError` naming the first out-of-range setting or an unknown fault. */
export function validateSettings(s: Settings): void {
  if (!(s.tokensPerSecond > 0)) throw new RangeError(`tokensPerSecond must be > 0, got ${s.tokensPerSecond}`);
  for (const k of ['ttftMs', 'faultAfterTokens', 'retryAfterSeconds', 'splitDelayMs', 'maxBodyBytes', 'maxRecords'] as const) {
    if (!(Number.isFinite(s[k]) && s[k] >= 0)) throw new RangeError(`${k} must be a finite number >= 0, got ${s[k]}`);
  }
  if (parseFault(s.fault) === undefined) throw new RangeError(`unknown fault ${JSON.stringify(s.fault)}`);
}

/** The transcripts a request may name: the built-in ones, shadowed by `s.transcripts`. */
export function transcriptRegistry(s: Settings): Readonly<Record<string, Transcript>> {
  return { ...BUILTIN_TRANSCRIPTS, ...s.transcripts };
}
