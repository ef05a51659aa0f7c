import http from 'node:http';
import { listen } from './net';

/** A fast SSE upstream that honours backpressure and counts what it managed to write. */
export interface CountingUpstream {
  url: string;
  /** Bytes handed to the kernel or buffered by `res.write()`, per request, in arrival order. */
  sent: number[];
  /** Requests whose client went away before the stream ended. */
  aborted: number;
  /** ms timestamps of aborts, for "aborted within X ms" checks. */
  abortedAt: number[];
  activeSockets(): number;
  close(): Promise<void>;
}

/**
 * Serves `GET|POST /sse`: events of `eventBytes` bytes of data each, up to `totalBytes`,
 * written as fast as the socket accepts (waits for 'drain' on `false`) or at `eventsPerSecond`,
 * then `data: [DONE]`.
 */
export async function countingUpstream(
  options: { eventBytes?: number; totalBytes?: number; text?: string; /** pace like a model; default: as fast as the socket takes */ eventsPerSecond?: number } = {},
): Promise<CountingUpstream> {
  const eventBytes = options.eventBytes ?? 1000;
  const totalBytes = options.totalBytes ?? 10 * 1024 * 1024;
  const unit = options.text ?? 'x';
  const payload = unit.repeat(Math.max(1, Math.floor(eventBytes / Buffer.byteLength(unit))));
  const frame = Buffer.from(`data: ${payload}\n\n`);
  const state = { sent: [] as number[], aborted: 0, abortedAt: [] as number[] };
  const sockets = new Set<import('node:net').Socket>();
  const server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
    const index = state.sent.push(0) - 1;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let finished = false;
    res.on('close', () => {
      if (!finished) {
        state.aborted++;
        state.abortedAt.push(Date.now());
      }
    });
    const perTick = options.eventsPerSecond === undefined ? Infinity : Math.max(1, Math.round(options.eventsPerSecond / 100));
    // The tick refills the allowance; 'drain' only resumes within what is left of it.
    let allowance = perTick;
    const tick = (): void => {
      allowance = perTick;
      pump();
    };
    const pump = (): void => {
      while (state.sent[index] < totalBytes) {
        if (res.destroyed) return;
        if (allowance <= 0) {
          setTimeout(tick, 10);
          return;
        }
        allowance--;
        state.sent[index] += frame.length;
        if (!res.write(frame)) {
          res.once('drain', pump);
          return;
        }
      }
      finished = true;
      res.end('data: [DONE]\n\n');
    };
    pump();
  });
  server.server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    url: `${server.url}/sse`,
    ...state,
    get sent() {
      return state.sent;
    },
    get aborted() {
      return state.aborted;
    },
    get abortedAt() {
      return state.abortedAt;
    },
    activeSockets: () => sockets.size,
    close: server.close,
  };
}
