/** The sizes of upstream socket reads and buffers, bytes (used by `node-hooks.ts` and the relay's byte admission). */

/**
 * Bytes libuv reads from an upstream socket at once (plain HTTP) unless the call sets
 * `UpstreamRequest.readBytes`. Every upstream socket reads into one shared buffer (net
 * `onread`) instead of a fresh 64 KiB one per read, so a read holds at most this much, and a
 * paused socket holds nothing: `pause()` stops reading at once instead of after one more read
 * into the socket's own buffer.
 */
export const UPSTREAM_READ_BYTES = 16 * 1024;
/** Largest read of an upstream socket, bytes, with `UpstreamRequest.readBytes` (Node's own read size). */
export const UPSTREAM_MAX_READ_BYTES = 64 * 1024;
/** Smallest read of an upstream socket, bytes: a `readBytes` below it still reads this much. */
export const UPSTREAM_MIN_READ_BYTES = 1024;
/**
 * Readable high-water mark of an upstream response (`IncomingMessage` takes its socket's), bytes:
 * a paused body stops its socket once this much is queued (plus the rest of the read in progress,
 * at most {@link UPSTREAM_READ_BYTES}, or the call's `readBytes`).
 */
export const UPSTREAM_HIGH_WATER_MARK = 4 * 1024;
