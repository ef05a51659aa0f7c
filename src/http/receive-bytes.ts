/** The receive buffer of upstream sockets, process-wide (applied by `node-hooks.ts` as each upstream socket connects). */

/** Default `SO_RCVBUF` of upstream sockets, bytes: 65536 (see {@link setUpstreamReceiveBytes}). */
export const DEFAULT_UPSTREAM_RECEIVE_BYTES = 64 * 1024;
/**
 * Smallest useful `SO_RCVBUF` of an upstream socket, bytes: below it the window is under half a
 * loopback segment (64 KiB MSS) and the sender waits on TCP's persist timer (16 KiB read 1.2 MB
 * in 8 s where 32 KiB read 4 MB in 0.2 s).
 */
export const MIN_UPSTREAM_RECEIVE_BYTES = 32 * 1024;
/** `SO_RCVBUF` for new upstream sockets, bytes; 0 leaves the kernel's autotuning. */
let upstreamReceiveBytes = DEFAULT_UPSTREAM_RECEIVE_BYTES;

/**
 * Bounds the kernel's receive queue of every upstream socket opened from now on, process-wide
 * (`SO_RCVBUF`, bytes; default {@link DEFAULT_UPSTREAM_RECEIVE_BYTES}; 0 leaves the kernel's
 * autotuning, up to `net.ipv4.tcp_rmem`'s maximum; a value under {@link MIN_UPSTREAM_RECEIVE_BYTES}
 * is raised to it).
 * A paused upstream then leaves at most about this much unread in the kernel (Linux counts
 * the buffer twice over for its own overhead). Set when the socket connects, before the request
 * is written, so the upstream sends nothing before it holds; the window scale was already
 * chosen from `tcp_rmem`, so the window can still grow later. Applies to the sockets of
 * `openUpstreamStream`, `fetchUpstream` and `connectSse` without an `agent` of their own. Needs
 * the socket options addon (see `socketOptionsUnavailable()`); without it this does nothing.
 *
 * @example
 * setUpstreamReceiveBytes(128 * 1024); // before the first upstream call
 */
export function setUpstreamReceiveBytes(bytes: number): void {
  upstreamReceiveBytes = bytes > 0 ? Math.max(MIN_UPSTREAM_RECEIVE_BYTES, Math.floor(bytes)) : 0;
}

/** The current {@link setUpstreamReceiveBytes} setting, bytes. */
export function upstreamReceiveBytesSetting(): number {
  return upstreamReceiveBytes;
}
