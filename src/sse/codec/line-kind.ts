import { COLON } from './bytes';

/** The field names the parser acts on, each followed by the colon that may end it. */
export const FIELD_PREFIXES = ['data:', 'event:', 'id:', 'retry:'].map((f) => Buffer.from(f, 'latin1'));
/** Bytes of a line's start that decide whether it names one of {@link FIELD_PREFIXES}. */
export const HEAD_BYTES = 7;

/**
 * Whether a line whose bytes start with `head[0, length)` is ignored by §9.2.6 whatever
 * follows: a comment (leading `:`), or a field other than data/event/id/retry. `total` is the
 * line length seen so far (`length` is at most {@link HEAD_BYTES} of it); `complete` says the
 * line ended there, so a name without a colon is the whole line.
 */
export function isIgnoredLine(head: Uint8Array, start: number, length: number, total: number, complete: boolean): boolean {
  if (total === 0) return false; // a blank line dispatches
  if (head[start] === COLON) return true;
  for (const prefix of FIELD_PREFIXES) {
    const nameLength = prefix.length - 1;
    if (complete) {
      // Exactly the name, or the name followed by its colon.
      if (total < nameLength) continue;
      const k = total === nameLength ? nameLength : nameLength + 1;
      if (matchesPrefix(head, start, prefix, k)) return false;
    } else if (matchesPrefix(head, start, prefix, Math.min(length, prefix.length))) {
      return false; // could still become this field
    }
  }
  return true;
}

function matchesPrefix(head: Uint8Array, start: number, prefix: Buffer, k: number): boolean {
  for (let i = 0; i < k; i++) if (head[start + i] !== prefix[i]) return false;
  return true;
}

