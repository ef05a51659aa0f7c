import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { sendQueueBytes } from './tcp-send-queue';
import { ProgressSampler, stallTickMs } from './progress';

/**
 * After a stream ended with bytes still queued for the peer (a stall cut, or an end behind a full
 * socket): calls `onDelivered` once the peer has taken the queued bytes (Node's, and with
 * `kernelToo` the kernel's send queue as well), or resets the socket (RST) once it has made no
 * progress for `stallMs`, so a peer that never reads again never holds the connection and its
 * queues for longer. Nothing is watched when `stallMs` is 0 (Node's own timeouts only).
 */
export function lingerUntilDelivered(res: ServerResponse, socket: Socket, stallMs: number, kernelToo: boolean, onDelivered: (() => void) | undefined): void {
  if (stallMs <= 0) return;
  const tickMs = stallTickMs(stallMs);
  const sampler = new ProgressSampler(res, tickMs);
  sampler.reset();
  let progressAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const check = (): void => {
    timer = undefined;
    if (socket.destroyed) return;
    if (res.writableLength === 0 && (!kernelToo || (sendQueueBytes(socket, tickMs / 2) ?? 0) === 0)) {
      onDelivered?.(); // all delivered (after a stall cut: a graceful end, the connection then closes)
      return;
    }
    if (sampler.moved()) progressAt = Date.now();
    if (Date.now() - progressAt >= stallMs) return resetSocket(socket);
    timer = setTimeout(check, tickMs);
  };
  timer = setTimeout(check, tickMs);
  socket.once('close', () => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

/** Resets `socket` (RST, dropping what the kernel still queues for the peer) and destroys it; a plain destroy where Node has no reset. */
export function resetSocket(socket: Socket): void {
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}
