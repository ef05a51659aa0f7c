import type { Response } from 'express';
import { BufferOverflowError } from '../../errors';
import type { ByteBudget } from '../../flow/budget';
import { addDemand } from '../../flow/demand';
import { OperatorSubscriber, operator } from '../../flow/operators/operator-subscriber';
import type { FlowOperator } from '../../flow/flow';
import type { FlowContext, Subscriber } from '../../flow/types';
import { UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES, type UpstreamStream } from '../../http/request';

/**
 * Budget the read sizes and the read gate keep free, bytes: a paused `IncomingMessage` goes on
 * reading until it holds its high-water mark, by reads of at least 1 KiB even without room; and
 * `res.writableLength` counts HTTP chunk framing and heartbeats beyond the frames (1 KiB).
 */
export const READ_SLACK_BYTES = UPSTREAM_HIGH_WATER_MARK + UPSTREAM_MIN_READ_BYTES + 1024;

/** What the admission asks of the upstream call: its unread bytes and whether its reads are sized. */
type UpstreamReads = Pick<UpstreamStream, 'bufferedBytes' | 'readsSized'>;

/** What an upstream reader whose reads are not sized may take unasked: its high-water mark, one 16 KiB read, one 16 KiB zlib chunk. */
export const UNSIZED_READER_BYTES = UPSTREAM_HIGH_WATER_MARK + 2 * UPSTREAM_READ_BYTES;

/**
 * The byte relay's admission of upstream bytes: the one owner of the rule "how many bytes may
 * enter this stream now". Bytes enter only by upstream reads; it sizes each read to the budget's
 * free room ({@link readBytes}) and holds the request for the next read while there is no room
 * ({@link gate}), until the bridge reports that bytes left ({@link onWritten}). So the budget
 * bounds every userland byte of the stream (reader, frames, bridge, `res.writableLength`)
 * whatever the demand downstream.
 *
 * Demand flows one way: socket → bridge → chain → gate → upstream read; bytes the other.
 */
export class ReadAdmission {
  private gateSubscriber: ReadGate | undefined;
  private reader: UpstreamReads | undefined;
  /** Bytes `sseFrames` holds (its queue, empty when it asks, and the incomplete event), and of those its queued frames alone. */
  readonly queued = { bytes: 0, outputBytes: 0 };
  /** Writes the bridge batched, before a read is sized (set once the bridge runs). */
  flushWrites: (() => void) | undefined;

  constructor(
    readonly budget: ByteBudget,
    private readonly res: Response,
  ) {}

  /**
   * The size of the next upstream read, bytes (`UpstreamRequest.readBytes`): the budget's room
   * once what the bridge batched was handed to the socket (a fast reader's kernel takes it at
   * once, so it does not count against the read). Until the reader is counted by the budget
   * ({@link admit}), its `unreadBytes` are subtracted here.
   */
  readonly readBytes = (unreadBytes: number): number => {
    this.flushWrites?.();
    return this.budget.room(this.reserveBytes()) - (this.reader === undefined ? unreadBytes : 0);
  };

  /**
   * No view of the bytes upstream reads delivered is held (`UpstreamRequest.bodyReleased`): the
   * budget counts every holder of one (the reader's unread bytes, `sseFrames`' queued frames, the
   * bridge's held and batched frames, `res.writableLength`, the overflow buffer's acquired
   * bytes), and all of it is zero but the incomplete event `sseFrames` keeps as a copy of its own.
   * False until the reader is counted ({@link admit}).
   */
  readonly bodyReleased = (): boolean => this.reader !== undefined && this.budget.used === this.queued.bytes - this.queued.outputBytes;

  /** Counts `reader`'s unread bytes and the frames' queue against the budget from now on. */
  admit(reader: UpstreamReads): void {
    this.reader = reader;
    this.budget.attachExternal(reader.bufferedBytes);
    this.budget.attachExternal(() => this.queued.bytes);
  }

  /** The operator that holds requests for the next read while there is no room. Use once per stream. */
  gate(): FlowOperator<Buffer, Buffer> {
    return operator<Buffer, Buffer>((actual, context) => (this.gateSubscriber = new ReadGate(actual, context, this)));
  }

  /** The bridge wrote or flushed: a read held for want of room may go now. */
  readonly onWritten = (): void => this.gateSubscriber?.poke();

  /** Requests held for want of room (0 when none wait). */
  get heldDemand(): number | undefined {
    return this.gateSubscriber?.heldDemand;
  }

  /** What may be read now, bytes: the budget's room less the reserve, and less what an unsized reader may still take unasked. */
  room(): number {
    const reader = this.reader as UpstreamReads;
    let room = this.budget.room(this.reserveBytes());
    if (!reader.readsSized()) room -= Math.max(0, UNSIZED_READER_BYTES - reader.bufferedBytes() - this.queued.bytes);
    return room;
  }

  /** The upstream reader and the frames' queue hold nothing: only the bridge's bytes are in the budget. */
  bridgeBytes(): number {
    return this.budget.used - (this.reader as UpstreamReads).bufferedBytes() - this.queued.bytes;
  }

  /** The reader is sized and holds nothing: no read would move the bytes it lacks. */
  readerStuck(): boolean {
    const reader = this.reader as UpstreamReads;
    return reader.readsSized() && reader.bufferedBytes() === 0;
  }

  /**
   * Budget kept free, bytes: {@link READ_SLACK_BYTES}, plus an eighth of the budget (8 KiB of
   * 64 KiB) while the client's socket holds unsent bytes (a reader not keeping up). The margin is
   * headroom: it costs a lagging stream smaller reads and a reader that keeps up nothing.
   */
  private reserveBytes(): number {
    return READ_SLACK_BYTES + (this.res.writableLength > 0 ? this.budget.maxBytes >> 3 : 0);
  }
}

/**
 * Passes a request for the next upstream read only while the budget has room for one, and holds
 * it otherwise until {@link poke} finds room. Without room and with nothing on its way out, the
 * reader's unread bytes are still delivered (their frames then leave); with none of those
 * either, the stream ends with {@link BufferOverflowError} (the incomplete event's cap makes
 * this unreachable).
 */
class ReadGate extends OperatorSubscriber<Buffer, Buffer> {
  private held = 0;

  constructor(
    actual: Subscriber<Buffer>,
    context: FlowContext,
    private readonly admission: ReadAdmission,
  ) {
    super(actual, context);
  }

  get heldDemand(): number {
    return this.held;
  }

  onNext(value: Buffer): void {
    this.actual.onNext(value);
  }

  override request(n: number): void {
    this.held = addDemand(this.held, n);
    this.poke();
  }

  /** Passes the held request upstream if the budget has room for a read now, or if the reader holds bytes nothing else will move. */
  poke(): void {
    if (this.held === 0 || this.done || this.cancelled) return;
    const { admission } = this;
    if (admission.room() < UPSTREAM_MIN_READ_BYTES) {
      // The bridge's bytes leave without a read: wait for them (the bridge pokes as it writes).
      if (admission.bridgeBytes() > 0) return;
      // Nothing leaves: the reader's bytes go on (their frames then leave), or it is stuck.
      if (admission.readerStuck()) {
        admission.budget.observe(); // how full it was, for the stream's peakBufferedBytes
        this.fail(new BufferOverflowError(`stream byte budget of ${admission.budget.maxBytes} bytes has no room for the rest of an event`));
        return;
      }
    }
    const n = this.held;
    this.held = 0;
    this.upstream.request(n);
  }
}
