import type { ServerResponse } from 'node:http';
import type { BridgeElement } from '../../express/send-flow';
import { encodeSse, SseFrame } from '../../sse';

/** Options of {@link scheduleEarlyCommit}. Units in the names. */
export interface EarlyCommitOptions {
  /** Commit the headers this long after the call if the response is still uncommitted, ms; 0: never. */
  afterMs: number;
  /** `: ping` every this many ms once committed (0: every `afterMs`). */
  heartbeatMs: number;
  /** Extra response headers sent with the commit (e.g. `X-Tidegate-Stream-Id`). */
  headers: Record<string, string>;
}

/** The pending or done early commit of one response (see {@link scheduleEarlyCommit}). */
export interface EarlyCommit {
  /** True once this helper sent the headers: errors must then go as an SSE error frame. */
  readonly committed: boolean;
  /** Stops the commit timer and the heartbeats (idempotent); call before the bridge takes the response. */
  stop(): void;
  /** After a commit: writes `formatError(error)` as the last frame and ends the response; a no-op otherwise. */
  fail(error: unknown, formatError: (error: unknown) => BridgeElement): void;
}

const PING = Buffer.from(': ping\n\n');

/**
 * Commits `200 text/event-stream` headers on `res` after `afterMs` if nothing did by then (the
 * upstream's status line has not arrived), and writes `: ping` comments while the gateway waits,
 * so a client or a proxy with an idle timeout sees bytes. The headers are those the demand bridge
 * sends (`Cache-Control: no-cache, no-transform`, `X-Accel-Buffering: no`), so the bridge later
 * skips its own commit and streams on. A ping is skipped while the client has unread bytes
 * queued (`res.writableLength > 0`): a client that does not read costs nothing but its socket.
 *
 * The price of the commit: the HTTP status is 200 from then on, so an upstream error is sent
 * with {@link EarlyCommit.fail} as an error frame in the provider's shape. The adapter's
 * `formatError` keeps an upstream HTTP error's own message, type and code when its body is the
 * provider's error JSON; only its status is lost (no provider's stream error has a field for it).
 */
export function scheduleEarlyCommit(res: ServerResponse, options: EarlyCommitOptions): EarlyCommit {
  let committed = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const ping = (): void => {
    if (!res.writableEnded && !res.destroyed && res.writableLength === 0) res.write(PING);
  };
  const commit = (): void => {
    timer = undefined;
    if (stopped || res.headersSent || res.writableEnded || res.destroyed) return;
    committed = true;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    if (res.req?.httpVersionMajor === 1 && res.shouldKeepAlive && !res.hasHeader('Connection')) res.setHeader('Connection', 'keep-alive');
    for (const [name, value] of Object.entries(options.headers)) res.setHeader(name, value);
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    ping();
    const every = options.heartbeatMs > 0 ? options.heartbeatMs : options.afterMs;
    timer = setInterval(ping, every);
  };
  if (options.afterMs > 0) timer = setTimeout(commit, options.afterMs);
  const stop = (): void => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer); // clears an interval as well
    timer = undefined;
  };
  return {
    get committed() {
      return committed;
    },
    stop,
    fail(error, formatError) {
      stop();
      if (!committed || res.writableEnded || res.destroyed) return;
      const frame = formatError(error);
      res.end(frame instanceof SseFrame ? frame.bytes : frame instanceof Uint8Array ? frame : encodeSse(frame));
    },
  };
}
