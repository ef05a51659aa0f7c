/**
 * A FIFO queue with O(1) `push`/`shift` (Array#shift is O(n)). Used by every buffering stage;
 * byte accounting is the owner's job, not the queue's.
 */
export class ArrayQueue<T> implements Iterable<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(value: T): void {
    this.items.push(value);
  }

  /** Removes and returns the oldest element; `undefined` when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const value = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      // Empty: drop the emptied slots now (a queue that passed many elements would otherwise hold
      // up to 2048 of them, 16 KB, until the compaction below).
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return value;
  }

  /** The oldest element without removing it. */
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** The newest element without removing it. */
  peekLast(): T | undefined {
    return this.head < this.items.length ? this.items[this.items.length - 1] : undefined;
  }

  /** Removes and returns the newest element. */
  pop(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const value = this.items.pop();
    if (this.head >= this.items.length) this.clear();
    return value;
  }

  /** Empties the queue and returns what it held, oldest first. */
  drainAll(): T[] {
    const out = this.items.slice(this.head) as T[];
    this.clear();
    return out;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i] as T;
  }
}
