import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AbortSignalLike } from '../../http/abort-signal-like';
import { resetSocket } from './linger';
import { StallWatch, type StallWatched } from './stall-watch';

/** Bytes per write of {@link writeWhole}: each one's completion shows the client reading. */
export const WHOLE_SLICE_BYTES = 16 * 1024;

/** A whole body being written by {@link writeWhole}. */
export interface WholeWrite {
  /** Bytes of the body Node handed to the kernel so far (grows as the client reads). */
  handed(): number;
}

/**
 * Writes `body` on `res` and ends it, {@link WHOLE_SLICE_BYTES} at a time, each slice once the
 * one before was handed to the kernel. Written at once, a large body sits in one write whose
 * unsent count only falls at its very end, and a client reading it steadily can keep the
 * kernel's send queue at one size: {@link awaitDelivery} would see no progress. Slice by slice,
 * {@link WholeWrite.handed} grows with every slice the client makes room for.
 *
 * Demand: one slice in flight; the next waits for the kernel to take it.
 * Discard: on a failed write (the client left) the rest is not written.
 *
 * @example
 * const write = writeWhole(res, body);
 * await awaitDelivery(res, 30_000, signal, write.handed);
 */
export function writeWhole(res: ServerResponse, body: Uint8Array): WholeWrite {
  let handed = 0;
  let at = 0;
  const next = (err?: Error | null): void => {
    if (err || res.destroyed) return;
    handed = at;
    if (at >= body.length) return void res.end();
    const end = Math.min(at + WHOLE_SLICE_BYTES, body.length);
    const slice = body.subarray(at, end);
    at = end;
    res.write(slice, next);
  };
  next();
  return { handed: () => handed };
}

/** How an ended response reached its client ({@link awaitDelivery}). */
export type DeliveryEnd = 'delivered' | 'client_closed' | 'stalled' | 'aborted';

/**
 * Waits for a response already ended with its whole body (`res.end(body)`) to reach its client:
 * `'delivered'` once Node handed its last byte to the kernel (`'finish'`), `'client_closed'`
 * when the client left first (`'close'` before `'finish'`), `'stalled'` when bytes stayed unsent
 * and the client took none of them for `stallMs` (the stall watch a stream has, see
 * {@link StallWatch}), `'aborted'` when `signal` aborted first. A stalled or aborted answer's
 * connection is reset. Without it a client that never reads holds a whole answer (MBs) in Node's
 * buffer for as long as it keeps its connection. `stallMs` 0 disables the stall cut.
 *
 * Demand: none; the body was written whole.
 * Discard: on a cut, the unsent bytes go with the socket.
 *
 * @param stallMs longest time without progress while bytes are unsent, ms (0: no cut)
 * @param handed the bytes a {@link writeWhole} handed to the kernel so far: any growth is progress
 * @example
 * res.end(body);
 * const end = await awaitDelivery(res, 30_000, signal); // 'delivered' | 'client_closed' | 'stalled' | 'aborted'
 */
export function awaitDelivery(res: ServerResponse, stallMs: number, signal?: AbortSignalLike | undefined, handed?: (() => number) | undefined): Promise<DeliveryEnd> {
  if (res.writableFinished) return Promise.resolve('delivered');
  if (res.destroyed) return Promise.resolve('client_closed');
  return new Promise((resolve) => new DeliveryWatch(res, stallMs, signal, resolve, handed).start());
}

/** One ended response's wait for its client: its listeners and stall watch, removed in {@link settle}. */
class DeliveryWatch implements StallWatched {
  private settled = false;
  private readonly watch: StallWatch;
  /** Taken now: Node detaches it from the response on `'finish'`, before this hears it. */
  private readonly socket: Socket | null;

  constructor(
    private readonly res: ServerResponse,
    stallMs: number,
    private readonly signal: AbortSignalLike | undefined,
    private readonly resolve: (end: DeliveryEnd) => void,
    private readonly handed: (() => number) | undefined,
  ) {
    this.watch = new StallWatch(res, stallMs, this);
    this.socket = res.socket;
    this.lastHanded = handed?.() ?? 0;
  }

  private lastHanded: number;

  /** {@link StallWatch}: the body's writer handed more of it to the kernel since the last tick. */
  moved(): boolean {
    if (this.handed === undefined) return false;
    const handed = this.handed();
    const moved = handed !== this.lastHanded;
    this.lastHanded = handed;
    return moved;
  }

  start(): void {
    this.res.on('finish', this.onFinish);
    this.res.on('close', this.onClose);
    this.signal?.addEventListener('abort', this.onAbort);
    if (this.signal?.aborted) return this.onAbort();
    this.watch.arm();
  }

  /** {@link StallWatch}: bytes are still unsent. */
  stillFull(): boolean {
    return !this.settled && this.res.writableLength > 0;
  }

  /** {@link StallWatch}: the client took no byte for the stall timeout. */
  stalled(): void {
    this.cut('stalled');
  }

  // Node also finishes a response whose last write failed (the peer reset it): not delivered.
  private readonly onFinish = (): void => this.settle(this.socket?.errored ? 'client_closed' : 'delivered');
  private readonly onClose = (): void => this.settle('client_closed');
  private readonly onAbort = (): void => this.cut('aborted');

  private cut(end: DeliveryEnd): void {
    if (this.settled) return;
    this.settle(end);
    const socket = this.socket;
    if (socket !== null) resetSocket(socket);
    else this.res.destroy();
  }

  private settle(end: DeliveryEnd): void {
    if (this.settled) return;
    this.settled = true;
    this.watch.clear();
    this.res.off('finish', this.onFinish);
    this.res.off('close', this.onClose);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.resolve(end);
  }
}
