/**
 * The replay window of one stream: its last events as encoded SSE bytes, numbered from 1 by
 * `seq`, bounded by bytes. The history half of Reactor's `Flux#replay(history)`, counted in
 * bytes rather than elements.
 *
 * Held: each kept event's bytes (counted in {@link bytes}). Trimmed oldest first by
 * {@link trim} down to a byte budget of history (the events before a floor its owner names);
 * the floor and later events (some reader still needs them) are never trimmed.
 */
export class ReplayWindow {
  private entries: Buffer[] = [];
  /** Cumulative bytes appended up to and including `entries[i]`. */
  private ends: number[] = [];
  private head = 0;
  /** Seq of `entries[head]`. */
  private first = 1;
  private kept = 0;
  private appended = 0;
  /** Cumulative bytes up to and including the last trimmed event. */
  private trimmedEnd = 0;

  /** Seq of the oldest kept event (`lastSeq + 1` when none is kept). */
  get firstSeq(): number {
    return this.first;
  }

  /** Seq of the newest event (0 before the first). */
  get lastSeq(): number {
    return this.first + this.entries.length - this.head - 1;
  }

  /** Bytes of the kept events. */
  get bytes(): number {
    return this.kept;
  }

  /** Appends an event's bytes; returns its seq. */
  append(bytes: Buffer): number {
    this.entries.push(bytes);
    this.appended += bytes.length;
    this.ends.push(this.appended);
    this.kept += bytes.length;
    return this.lastSeq;
  }

  /** The bytes of event `seq`, `undefined` when it is not kept. */
  get(seq: number): Buffer | undefined {
    if (seq < this.first || seq > this.lastSeq) return undefined;
    return this.entries[this.head + seq - this.first];
  }

  /** Bytes of the kept events after event `seq`; events before the window count from its start. */
  bytesAfter(seq: number): number {
    if (seq >= this.lastSeq) return 0;
    if (seq < this.first) return this.appended - this.trimmedEnd;
    return this.appended - (this.ends[this.head + seq - this.first] as number);
  }

  /**
   * Drops the oldest events while the events before `floorSeq` (the history: events every
   * reader already took) hold more than `maxBytes`. Event `floorSeq` and later ones are never
   * dropped, whatever their size: the window holds at most `maxBytes` of history plus the events
   * from `floorSeq` on, which its owner bounds.
   */
  trim(maxBytes: number, floorSeq: number): void {
    while (this.first < floorSeq && this.head < this.entries.length && this.bytesBefore(floorSeq) > maxBytes) {
      this.kept -= (this.entries[this.head] as Buffer).length;
      this.trimmedEnd = this.ends[this.head] as number;
      this.entries[this.head] = EMPTY;
      this.head++;
      this.first++;
    }
    // Compact once the dropped prefix is the larger part.
    if (this.head >= 64 && this.head * 2 >= this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.ends = this.ends.slice(this.head);
      this.head = 0;
    }
  }

  /** Bytes of the kept events before event `seq`. */
  bytesBefore(seq: number): number {
    const last = Math.min(seq - 1, this.lastSeq);
    if (last < this.first) return 0;
    return (this.ends[this.head + last - this.first] as number) - this.trimmedEnd;
  }

  /**
   * Copies the kept events into one buffer of their exact size, each event a view of it. An
   * event's bytes are often a view of a shared 8 KiB pool slab (`Buffer.from` of a short
   * string), which a log kept for minutes would hold whole: for a finished stream's log, which
   * gains no more events.
   */
  compact(): void {
    if (this.head >= this.entries.length) return;
    const packed = Buffer.allocUnsafeSlow(this.kept);
    const entries: Buffer[] = [];
    let at = 0;
    for (let i = this.head; i < this.entries.length; i++) {
      const bytes = this.entries[i] as Buffer;
      packed.set(bytes, at);
      entries.push(packed.subarray(at, at + bytes.length));
      at += bytes.length;
    }
    this.entries = entries;
    this.ends = this.ends.slice(this.head);
    this.head = 0;
  }

  /** Drops every event (the stream's log is given up). */
  clear(): void {
    this.trim(0, Infinity);
  }
}

const EMPTY = Buffer.alloc(0);
