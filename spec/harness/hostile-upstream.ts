import http from 'node:http';
import type net from 'node:net';
import zlib from 'node:zlib';
import { listen, trackOpen } from './net';

/** What a hostile upstream saw, per path. */
export interface HostileUpstream {
  url: string;
  /** Requests received, by path. */
  requests: Map<string, number>;
  /** Responses whose peer (the gateway) closed before they ended, by path. */
  aborted: Map<string, number>;
  /** Last-Event-ID header values received, in order. */
  lastEventIds: string[];
  /** Bytes the /fast route managed to hand to `res.write()`. */
  fastBytes(): number;
  openSockets(): number;
  close(): Promise<void>;
}

const bump = (m: Map<string, number>, k: string): void => {
  m.set(k, (m.get(k) ?? 0) + 1);
};

/**
 * An SSE upstream that misbehaves on purpose, on 127.0.0.1:
 * - `/hang`: 200 + headers, then silence forever;
 * - `/ttft`: silence for 2 s before the headers (a model thinking);
 * - `/reset`: half an event, then a TCP reset;
 * - `/big`: one 5 MB event;
 * - `/gzip`: a gzip-encoded event stream (ignoring `Accept-Encoding: identity`);
 * - `/fast`: 1 KB events as fast as the socket takes them, forever;
 * - `/slow`: one small event every 20 ms, forever;
 * - `/echo`: echoes the Last-Event-ID header in one event, then `[DONE]`.
 */
export async function hostileUpstream(): Promise<HostileUpstream> {
  const requests = new Map<string, number>();
  const aborted = new Map<string, number>();
  const lastEventIds: string[] = [];
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let fast = 0;
  const later = (ms: number, fn: () => void): void => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const sse = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
  const server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    bump(requests, path);
    let ended = false;
    res.on('finish', () => (ended = true));
    res.on('close', () => {
      if (!ended) bump(aborted, path);
    });
    req.resume();
    switch (path) {
      case '/hang':
        res.writeHead(200, sse);
        res.flushHeaders();
        return;
      case '/ttft':
        later(2000, () => {
          if (res.destroyed) return;
          res.writeHead(200, sse);
          res.end('data: late\n\ndata: [DONE]\n\n');
        });
        return;
      case '/reset':
        res.writeHead(200, sse);
        res.write('data: complete\n\ndata: half of an ev');
        later(50, () => res.socket?.resetAndDestroy());
        return;
      case '/big':
        res.writeHead(200, sse);
        res.end(`data: ${'x'.repeat(5 * 1024 * 1024)}\n\n`);
        return;
      case '/gzip':
        res.writeHead(200, { ...sse, 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync('data: zipped\n\ndata: [DONE]\n\n'));
        return;
      case '/fast': {
        res.writeHead(200, sse);
        const frame = Buffer.from(`data: ${'f'.repeat(1000)}\n\n`);
        const pump = (): void => {
          while (!res.destroyed) {
            fast += frame.length;
            if (!res.write(frame)) {
              res.once('drain', pump);
              return;
            }
          }
        };
        pump();
        return;
      }
      case '/slow': {
        res.writeHead(200, sse);
        let i = 0;
        const tick = (): void => {
          if (res.destroyed) return;
          res.write(`id: ${i}\ndata: tick ${i++}\n\n`);
          later(20, tick);
        };
        tick();
        return;
      }
      case '/echo':
        lastEventIds.push(String(req.headers['last-event-id'] ?? ''));
        res.writeHead(200, sse);
        res.end(`data: ${JSON.stringify(req.headers['last-event-id'] ?? null)}\n\ndata: [DONE]\n\n`);
        return;
      default:
        res.writeHead(404).end();
    }
  });
  server.server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const upstream = {
    url: server.url,
    requests,
    aborted,
    lastEventIds,
    fastBytes: () => fast,
    openSockets: () => sockets.size,
    async close() {
      untrack();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await server.close();
    },
  };
  const untrack = trackOpen(() => upstream.close());
  return upstream;
}
