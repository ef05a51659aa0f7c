import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { SocketDeadline } from './socket-deadline';

/** What {@link readBounded} does at each of its limits. */
export interface BoundedRead {
  /** Most bytes kept; the chunk that passes it ends the read. */
  maxBytes: number;
  /** Called once the count passes `maxBytes`; returns the rejection (it may abort the request first). Not called with `truncate`. */
  tooLarge: (maxBytes: number) => unknown;
  /** The whole body must arrive within this, ms (absent or 0: no deadline). */
  timeoutMs?: number | undefined;
  /** Called at the deadline; returns the rejection. Required with `timeoutMs`. */
  timedOut?: ((timeoutMs: number) => unknown) | undefined;
  /** Longest silence before the first chunk and between chunks, ms (absent or 0: none). */
  idleMs?: number | undefined;
  /**
   * Called when `idleMs` passed without a chunk; returns the rejection, or `undefined` to resolve
   * with the bytes that arrived (an error body cut where it stalled). Required with `idleMs`.
   */
  idled?: ((idleMs: number) => unknown) | undefined;
  /**
   * The body closed before its end (a peer that left, a destroy elsewhere): returns the
   * rejection; absent, the read resolves with what arrived.
   */
  closedEarly?: (() => unknown) | undefined;
  /**
   * Another emitter whose `'close'` ends the read as the body's own would: a request's socket,
   * since Node emits no `'close'` on a request answered before its body ended.
   */
  closeWith?: EventEmitter | undefined;
  /**
   * Past `maxBytes`, resolve with the first `maxBytes` instead of rejecting; the rest is left
   * unread for the caller to release (an error body a client reports but never trusts).
   */
  truncate?: boolean | undefined;
}

/**
 * Reads `body` to its end, counting bytes as they arrive, and resolves with them in one Buffer.
 * It never holds more than `maxBytes` plus one chunk: the chunk that passes the limit rejects
 * with `tooLarge()`, a deadline with `timedOut()`, a silence with `idled()`, an early close with
 * `closedEarly()`, an `'error'` with that error. Every listener and the timers go in one
 * teardown, whichever ends it.
 *
 * Demand: reads at the body's own pace (flowing mode) until the end or a limit. Discard: on a
 * rejection the chunks read so far are dropped; what the callbacks do with the stream (destroy,
 * pause, drain) is theirs to say.
 *
 * Never `res.text()` / `res.buffer()` on a peer's body: they read without a bound.
 */
export function readBounded(body: Readable, limits: BoundedRead): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let timer: SocketDeadline | undefined;
    let idleTimer: SocketDeadline | undefined;
    const teardown = (): void => {
      timer?.clear();
      idleTimer?.clear();
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      limits.closeWith?.off('close', onClose);
    };
    const fail = (reason: () => unknown): void => {
      teardown();
      chunks.length = 0;
      reject(reason());
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      idleTimer?.refresh();
      bytes += buf.length;
      if (bytes <= limits.maxBytes) chunks.push(buf);
      else if (limits.truncate !== true) fail(() => limits.tooLarge(limits.maxBytes));
      else {
        teardown();
        chunks.push(buf.subarray(0, buf.length - (bytes - limits.maxBytes)));
        resolve(Buffer.concat(chunks, limits.maxBytes));
      }
    };
    const onEnd = (): void => {
      teardown();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, bytes));
    };
    const onError = (err: unknown): void => fail(() => err);
    const onClose = (): void => {
      if (body.readableEnded) return;
      if (limits.closedEarly === undefined) onEnd();
      else fail(limits.closedEarly);
    };
    // A body destroyed before this read (an error its stream emitted to no listener) has
    // nothing more to emit: it would wait out its deadlines.
    if (body.errored !== null && body.errored !== undefined) return onError(body.errored);
    if (body.destroyed && !body.readableEnded) return onClose();
    const { timeoutMs, timedOut } = limits;
    // Each deadline's verdict waits for the next poll: a blocked loop does not cut a body whose
    // next bytes or end already arrived (SocketDeadline).
    if (timeoutMs !== undefined && timeoutMs > 0 && timedOut !== undefined) timer = new SocketDeadline(timeoutMs, () => fail(() => timedOut(timeoutMs)));
    const { idleMs, idled } = limits;
    const onIdle = (reason: unknown): void => {
      if (reason !== undefined) fail(() => reason);
      else onEnd();
    };
    if (idleMs !== undefined && idleMs > 0 && idled !== undefined) idleTimer = new SocketDeadline(idleMs, () => onIdle(idled(idleMs)));
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
    limits.closeWith?.once('close', onClose);
  });
}
