import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AbortSignalLike } from '../../http/abort-signal-like';
import { resetSocket } from './linger';
import { StallWatch, type StallWatched } from './stall-watch';

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
 * @example
 * res.end(body);
 * const end = await awaitDelivery(res, 30_000, signal); // 'delivered' | 'client_closed' | 'stalled' | 'aborted'
 */
export function awaitDelivery(res: ServerResponse, stallMs: number, signal?: AbortSignalLike | undefined): Promise<DeliveryEnd> {
  if (res.writableFinished) return Promise.resolve('delivered');
  if (res.destroyed) return Promise.resolve('client_closed');
  return new Promise((resolve) => new DeliveryWatch(res, stallMs, signal, resolve).start());
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
  ) {
    this.watch = new StallWatch(res, stallMs, this);
    this.socket = res.socket;
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
