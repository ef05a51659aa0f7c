import type http from 'node:http';
import type net from 'node:net';
import { listen } from '../harness/net';
import type { FlowSubscription } from '../../src/flow/types';
import type { Flow } from '../../src/flow/flow';
import type { SseEvent } from '../../src/sse/codec/parser';

/** One request as the test server saw it. */
export interface SeenRequest {
  index: number;
  method: string;
  headers: http.IncomingHttpHeaders;
  /** `performance.now()` at arrival, ms. */
  at: number;
}

/** A scripted SSE test server on 127.0.0.1: `handler` gets each request with its 0-based index. */
export interface ScriptedServer {
  url: string;
  port: number;
  requests: SeenRequest[];
  /** Server-side sockets currently open. */
  openSockets(): number;
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void;

export async function scriptedServer(handler: Handler, port = 0): Promise<ScriptedServer> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<net.Socket>();
  const server = await listen((req, res) => {
    const index = requests.length;
    requests.push({ index, method: req.method ?? '', headers: req.headers, at: performance.now() });
    handler(req, res, index);
  }, port);
  server.server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return { url: `${server.url}/sse`, port: server.port, requests, openSockets: () => sockets.size, close: server.close };
}


export function sseHead(res: http.ServerResponse, extra: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...extra });
}

/** Collects a flow's signals, subscribing with demand (`initial` requested at once). */
export function collect(flow: Flow<SseEvent>, initial = Infinity): {
  events: SseEvent[];
  sub: FlowSubscription;
  done: Promise<{ error?: unknown }>;
} {
  const events: SseEvent[] = [];
  let settle: (v: { error?: unknown }) => void = () => undefined;
  const done = new Promise<{ error?: unknown }>((r) => (settle = r));
  const sub = flow.subscribeWithDemand({
    next: (e) => events.push(e),
    error: (error) => settle({ error }),
    complete: () => settle({}),
  });
  sub.request(initial);
  return { events, sub, done };
}

/** Every signal a subscriber saw, in order (`next:<data>`, `error:<text>`, `complete`), so a signal after the end would show; `initial` requested at once (0: none). */
export function recordSignals(flow: Flow<SseEvent>, initial = Infinity): { signals: string[]; done: Promise<void>; request(n: number): void; cancel(): void } {
  const signals: string[] = [];
  let settle: () => void = () => undefined;
  const done = new Promise<void>((r) => (settle = r));
  const sub = flow.subscribeWithDemand({
    next: (e) => signals.push(`next:${e.data}`),
    error: (err) => {
      signals.push(`error:${String(err)}`);
      settle();
    },
    complete: () => {
      signals.push('complete');
      settle();
    },
  });
  if (initial > 0) sub.request(initial);
  return { signals, done, request: (n) => sub.request(n), cancel: () => sub.cancel() };
}

/** Sockets in an agent's pool (`agent.sockets` or `agent.freeSockets`). */
export function pooledSockets(pool: NodeJS.ReadOnlyDict<net.Socket[]>): number {
  return Object.values(pool).reduce((n, list) => n + (list?.length ?? 0), 0);
}

/** Rejects if `promise` does not settle within `ms`, so no test hangs until the jest timeout. */
export function within<T>(promise: Promise<T>, ms: number, what = 'operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * `serve(handler)` for the calling spec file: a {@link scriptedServer} on an ephemeral port,
 * closed after each test (registers the `afterEach`).
 */
export function scriptedServers(): (handler: Handler) => Promise<ScriptedServer> {
  const open: ScriptedServer[] = [];
  afterEach(async () => {
    for (const server of open.splice(0)) await server.close();
  });
  return async (handler) => {
    const server = await scriptedServer(handler);
    open.push(server);
    return server;
  };
}

/** The OpenAI-style terminator: `data: [DONE]`. */
export const isDone = (e: { data: string }): boolean => e.data === '[DONE]';
