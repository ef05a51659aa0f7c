/** Inputs of {@link planCapacity}. */
export interface CapacityInput {
  /** Heap share reserved for stream buffers, bytes (M). */
  heapBytes: number;
  /** Concurrent streams (C). */
  streams: number;
  /** Average event size on the wire, bytes (S). */
  eventBytes: number;
  /** Heap bytes per wire byte held (k): object headers, UTF-16 strings, queue slots; 2–3 is typical for V8. */
  overheadFactor: number;
  /** Producer rate, events/s. */
  producerEventsPerSec: number;
  /** Consumer rate, bytes/s. */
  consumerBytesPerSec: number;
}

/** What {@link planCapacity} derives. */
export interface CapacityPlan {
  /** Events each stream may park: n ≤ M / (C × S × k). */
  eventsPerStream: number;
  /** The per-stream byte budget to configure (`maxBufferedBytes`): n × S wire bytes. */
  budgetBytes: number;
  /** Producer minus consumer, bytes/s (≤ 0: the consumer keeps up). */
  gapBytesPerSec: number;
  /** Seconds the budget absorbs the gap before overflow; `Infinity` when the consumer keeps up. */
  absorbSeconds: number;
}

/**
 * The capacity planner's arithmetic: a per-stream budget of n ≤ M / (C × S × k) events and the
 * seconds that budget absorbs a producer/consumer rate gap (n × S / gap). The playground page
 * runs the same formula in the browser next to a live run's measured figure.
 *
 * @throws RangeError when a count or size is not positive.
 */
export function planCapacity(input: CapacityInput): CapacityPlan {
  const { heapBytes, streams, eventBytes, overheadFactor } = input;
  for (const [name, v] of Object.entries({ heapBytes, streams, eventBytes, overheadFactor })) {
    if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`planCapacity: ${name} must be a positive number, got ${v}`);
  }
  const eventsPerStream = Math.floor(heapBytes / (streams * eventBytes * overheadFactor));
  const budgetBytes = eventsPerStream * eventBytes;
  const gapBytesPerSec = input.producerEventsPerSec * eventBytes - input.consumerBytesPerSec;
  const absorbSeconds = gapBytesPerSec > 0 ? budgetBytes / gapBytesPerSec : Infinity;
  return { eventsPerStream, budgetBytes, gapBytesPerSec, absorbSeconds };
}
