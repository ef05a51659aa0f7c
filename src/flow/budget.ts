/**
 * A per-stream byte budget shared by every buffer of one stream: the operators that park
 * elements and the Express bridge's in-flight writes (`res.writableLength`). Counted in encoded
 * UTF-8 bytes, never in items or string length.
 *
 * Acquire before buffering (`used + size > maxBytes` refuses, so one large element never
 * overshoots), release as soon as the bytes leave the buffer. The owner of the budget is the
 * stream; each stage that buffers is the owner of the bytes it acquired.
 *
 * @example
 * const budget = new ByteBudget(64 * 1024);
 * if (!budget.tryAcquire(4)) throw new BufferOverflowError();
 * budget.release(4);
 */
export class ByteBudget {
  private usedBytes = 0;
  private peakBytes = 0;
  private external: (() => number) | undefined;

  /** @param maxBytes the budget in bytes, at least 1 (`Infinity` for an unbounded account). */
  constructor(readonly maxBytes: number) {
    if (!(maxBytes >= 1)) throw new RangeError(`ByteBudget: maxBytes must be >= 1, got ${maxBytes}`);
  }

  /** Bytes currently held by all owners, including the attached external count. */
  get used(): number {
    return this.external === undefined ? this.usedBytes : this.usedBytes + this.external();
  }

  /**
   * Counts bytes held outside the acquire/release protocol, such as a socket's
   * `writableLength`, against this budget; several counts add up. The Express bridge attaches its
   * held bytes and `res.writableLength`, the gateway the upstream reader's unread bytes.
   */
  attachExternal(count: () => number): void {
    const previous = this.external;
    this.external = previous === undefined ? count : () => previous() + count();
  }

  /** The most bytes ever held at once (as seen at acquire time, refused or not), for metrics and tests. */
  get peak(): number {
    return this.peakBytes;
  }

  /** Bytes still available. */
  get available(): number {
    return this.maxBytes - this.used;
  }

  /**
   * Bytes that may still enter while `reserveBytes` stay free for holders that grow without
   * acquiring (a reader filling up to its high-water mark): `maxBytes - used - reserveBytes`.
   * May be negative. The one formula every admission decision of a stream uses.
   */
  room(reserveBytes = 0): number {
    return this.maxBytes - this.used - reserveBytes;
  }

  /**
   * Takes `bytes` from the budget; `false` (and nothing taken) when it would exceed `maxBytes`.
   * A refusal still records what was held then as a peak candidate: a stream that overflowed
   * reports how full its budget was, counting the external holders.
   */
  tryAcquire(bytes: number): boolean {
    const used = this.used;
    if (used + bytes > this.maxBytes) {
      if (used > this.peakBytes) this.peakBytes = used;
      return false;
    }
    this.usedBytes += bytes;
    if (used + bytes > this.peakBytes) this.peakBytes = used + bytes;
    return true;
  }

  /**
   * Whether an element of `bytes` fits in {@link room}(`reserveBytes`), recording the peak as
   * {@link tryAcquire} does (`used + bytes` when it fits, `used` when it does not) without taking
   * the bytes: for a holder the budget counts externally, such as the Express bridge, whose
   * writes show in `res.writableLength`.
   */
  fits(bytes: number, reserveBytes = 0): boolean {
    const used = this.used;
    if (bytes > this.maxBytes - used - reserveBytes) {
      if (used > this.peakBytes) this.peakBytes = used;
      return false;
    }
    if (used + bytes > this.peakBytes) this.peakBytes = used + bytes;
    return true;
  }

  /** Returns `bytes` to the budget. */
  release(bytes: number): void {
    this.usedBytes = Math.max(0, this.usedBytes - bytes);
  }

  /** Records the current total as a peak candidate (for holders that grow without acquiring). */
  observe(): number {
    const used = this.used;
    if (used > this.peakBytes) this.peakBytes = used;
    return used;
  }
}

/**
 * The size of an element in bytes: UTF-8 length of a string, `byteLength` of a Buffer, typed
 * array or ArrayBuffer, and the UTF-8 length of its JSON text for anything else.
 */
export function utf8Size(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (value instanceof Uint8Array || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    return (value as ArrayBufferView | ArrayBuffer).byteLength;
  }
  if (value === undefined || value === null) return 0;
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}
