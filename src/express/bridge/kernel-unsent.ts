import type { Server, Socket } from 'node:net';
import { acceptedBy } from '../../http/node-hooks';
import { getSocketOption, kernelQueueBytes, reportUnboundedOnce, setSocketOption } from '../../http/socket-options';

/**
 * Default `kernelUnsentBytes` of {@link sendFlow} and `sse()`, bytes (16384, Node's own
 * `writableHighWaterMark`): the most unsent bytes the kernel keeps for a stream's client socket
 * (`TCP_NOTSENT_LOWAT`), capped at a quarter of the stream's budget. Set only where the socket
 * options addon loaded (see `socketOptionsUnavailable()`).
 */
export const DEFAULT_KERNEL_UNSENT_BYTES = 16 * 1024;

/**
 * The `TCP_NOTSENT_LOWAT` a stream's client socket gets, bytes: `kernelUnsentBytes` when given
 * (0 leaves the kernel's default), else {@link DEFAULT_KERNEL_UNSENT_BYTES} capped at a quarter
 * of the stream's budget, so a small budget keeps a small kernel queue too.
 */
export function kernelUnsentBytesFor(kernelUnsentBytes: number | undefined, budgetBytes: number): number {
  if (kernelUnsentBytes !== undefined) return Math.max(0, Math.floor(kernelUnsentBytes));
  return Math.max(1024, Math.min(DEFAULT_KERNEL_UNSENT_BYTES, Math.floor(budgetBytes / 4)));
}

/**
 * Bounds the bytes the kernel keeps unsent for `socket` (`TCP_NOTSENT_LOWAT`): the socket reports
 * writable only while fewer are unsent, so `res.write()` returns `false`, and the bridge stops
 * asking, after about this much (plus the segment being filled, at most 64 KiB) instead of after
 * the whole autotuned send buffer (MBs). Bytes in flight to a reader that keeps up are not
 * bounded, so a fast reader keeps its window. `bytes` 0 does nothing. Without the socket options
 * addon the kernel's default holds, said once per process.
 */
export function boundKernelUnsent(socket: Socket | null, bytes: number): void {
  if (bytes <= 0 || socket === null) return;
  // Inherited from its listener, or set by an earlier stream on this connection: no syscall.
  const server = acceptedBy(socket);
  const inherited = server === undefined ? undefined : listenerUnsent.get(server);
  const known = inherited === undefined ? undefined : (changedUnsent.get(socket) ?? inherited);
  if (known === bytes) return;
  if (!setSocketOption(socket, 'notsentLowat', bytes)) reportUnboundedOnce(`the kernel's unsent bytes per client socket (kernelUnsentBytes ${bytes})`);
  else if (inherited !== undefined) changedUnsent.set(socket, bytes);
}

/** The `TCP_NOTSENT_LOWAT` of the listeners {@link boundListenerUnsent} bounded: their accepted sockets have it. */
const listenerUnsent = new WeakMap<Server, number>();
/** Accepted sockets of such a listener whose bound a stream set to another value since. */
const changedUnsent = new WeakMap<Socket, number>();

/**
 * Bounds the unsent bytes of every socket `server` accepts from now on to `bytes`, set once on
 * the listening socket: Linux copies `TCP_NOTSENT_LOWAT` into each accepted socket, and
 * {@link boundKernelUnsent} then skips its `setsockopt()` (one syscall less per stream) where it
 * would set the same value; another value is still set on the socket. The first accepted socket
 * is checked: where it did not inherit the bound, each stream sets its own as before. Call it
 * once the server listens. Returns `false` (and does nothing) when `bytes` ≤ 0, without the
 * socket options addon, or when the kernel refused.
 */
export function boundListenerUnsent(server: Server, bytes: number): boolean {
  if (bytes <= 0 || !setSocketOption(server, 'notsentLowat', bytes)) return false;
  listenerUnsent.set(server, bytes);
  server.once('connection', (socket: Socket) => {
    if (getSocketOption(socket, 'notsentLowat') !== bytes) listenerUnsent.delete(server);
  });
  return true;
}

/** The kernel's send queue of a client socket and its unsent part, bytes, where the addon can read them. */
export function kernelSendBytes(socket: Socket | null): { sendQueue: number; unsent: number } | undefined {
  const queues = socket === null ? undefined : kernelQueueBytes(socket);
  return queues === undefined ? undefined : { sendQueue: queues.sendQueue, unsent: queues.unsent };
}
