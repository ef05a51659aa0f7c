/**
 * Shared helpers for relay specs over real sockets: a scripted upstream (one script of steps per
 * request), a gateway in front of it with captured logs, a WHATWG-like client parse of what the
 * gateway sent, seeded randomness and a sampler of the buffered-bytes gauge.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import http from 'node:http';
import type net from 'node:net';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport } from '../gateway/helpers';
import { listen, trackOpen, type RawClient } from './net';

/** What {@link useRelayHarness} sets up for a describe block; filled in by its `beforeAll`. */
export interface RelayHarness {
  up: ScriptedUpstream;
  gw: RunningGateway;
  logs: CaptureTransport;
  /** Raw clients a test opens: destroyed after each test. */
  clients: RawClient[];
}

/**
 * One scripted upstream and one gateway (heartbeats off) for the enclosing describe block, with
 * the routes `routes(upstreamUrl)` gives; both closed after the block.
 */
export function useRelayHarness(routes: (upstreamUrl: string) => unknown[]): RelayHarness {
  const h = { clients: [] as RawClient[] } as RelayHarness;
  beforeAll(async () => {
    h.up = await scriptedUpstream();
    ({ gw: h.gw, logs: h.logs } = await testGateway(h.up.url, routes(h.up.url), { heartbeatMs: 0 }));
  });
  afterEach(() => {
    for (const c of h.clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await h.gw?.close();
    await h.up?.close();
  });
  return h;
}

/** One step of a scripted upstream: bytes to write, a pause (ms), or an action on the socket. */
export type Step = string | Buffer | number | { reset: true } | { end: true } | { raw: Buffer };

export type Script = (req: http.IncomingMessage, res: http.ServerResponse) => Step[] | void;

/** An upstream answering each request with the script named by its `x-script` header (or path). */
export interface ScriptedUpstream {
  url: string;
  scripts: Map<string, Script>;
  /** Sockets the upstream accepted (for keep-alive reuse checks). */
  sockets: Set<net.Socket>;
  accepted: number;
  /** Responses whose socket closed before they ended. */
  aborted: number;
  close(): Promise<void>;
}

export const SSE_HEAD = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

export async function scriptedUpstream(): Promise<ScriptedUpstream> {
  const scripts = new Map<string, Script>();
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<net.Socket>();
  const state = { accepted: 0, aborted: 0 };
  const server = await listen((req, res) => {
    const name = String(req.headers['x-script'] ?? (req.url ?? '/').split('?')[0]);
    const script = scripts.get(name);
    req.resume();
    if (script === undefined) {
      res.writeHead(404).end(`no script ${name}`);
      return;
    }
    let ended = false;
    res.on('finish', () => (ended = true));
    res.on('close', () => {
      if (!ended) state.aborted++;
    });
    const steps = script(req, res);
    if (steps === undefined) return;
    if (!res.headersSent) res.writeHead(200, SSE_HEAD);
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    const next = (i: number): void => {
      if (res.destroyed) return;
      if (i >= steps.length) {
        res.end();
        return;
      }
      const step = steps[i] as Step;
      if (typeof step === 'number') {
        const t = setTimeout(() => {
          timers.delete(t);
          next(i + 1);
        }, step);
        timers.add(t);
        return;
      }
      if (typeof step === 'object' && 'reset' in step) {
        res.socket?.resetAndDestroy();
        return;
      }
      if (typeof step === 'object' && 'end' in step) {
        res.end();
        return;
      }
      if (typeof step === 'object' && 'raw' in step) {
        res.socket?.write(step.raw);
        return next(i + 1);
      }
      if (res.write(step as string | Buffer)) next(i + 1);
      else res.once('drain', () => next(i + 1));
    };
    next(0);
  });
  server.server.on('connection', (s: net.Socket) => {
    state.accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const upstream = {
    url: server.url,
    scripts,
    sockets,
    get accepted() {
      return state.accepted;
    },
    get aborted() {
      return state.aborted;
    },
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

/** A gateway on 127.0.0.1:0 in front of `upstreamUrl`, with captured logs. */
export async function testGateway(upstreamUrl: string, routes: unknown[], stream: Record<string, unknown> = {}): Promise<{ gw: RunningGateway; logs: CaptureTransport }> {
  const logs = new CaptureTransport();
  const config = parseConfig({ port: 0, upstream: { url: upstreamUrl }, retry: { maxAttempts: 1 }, stream, routes });
  const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  const close = gw.close.bind(gw);
  const untrack = trackOpen(close);
  gw.close = () => {
    untrack();
    return close();
  };
  return { gw, logs };
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The response ended with an error (reset) instead of a clean end. */
  aborted: boolean;
}

/** POSTs `body` (JSON) to the gateway and reads the whole reply. */
export function post(url: string, headers: Record<string, string> = {}, body: unknown = { stream: true, model: 'm', messages: [] }, agent?: http.Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(url, { method: 'POST', agent: agent ?? false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...headers } }, (res) => {
      const parts: Buffer[] = [];
      let aborted = false;
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('aborted', () => (aborted = true));
      res.on('error', () => (aborted = true));
      res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts), aborted: aborted || !res.complete }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

export interface ClientEvent {
  event: string;
  data: string;
  lastEventId: string;
}

/** What a browser-like client sees: UTF-8 decode (one BOM stripped), eventsource-parser, last event id tracked. */
export function clientEvents(bytes: Buffer): ClientEvent[] {
  const out: ClientEvent[] = [];
  let lastEventId = '';
  const parser = createParser({
    onEvent: (e: EventSourceMessage) => {
      if (e.id !== undefined) lastEventId = e.id;
      out.push({ event: e.event ?? 'message', data: e.data, lastEventId });
    },
  });
  parser.feed(new TextDecoder('utf-8').decode(bytes) + ':');
  return out;
}

/** Splits `text` into pieces at the given byte offsets. */
export function cutAt(text: string | Buffer, ...offsets: number[]): Buffer[] {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const out: Buffer[] = [];
  let at = 0;
  for (const o of offsets) {
    out.push(bytes.subarray(at, o));
    at = o;
  }
  out.push(bytes.subarray(at));
  return out.filter((b) => b.length > 0);
}

/** Interleaves `ms` pauses between the pieces (so each piece is its own TCP segment / read). */
export function paced(pieces: (string | Buffer)[], ms = 5): Step[] {
  return pieces.flatMap((p, i) => (i === 0 ? [p] : [ms, p]));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A seeded PRNG (mulberry32) for reproducible random chunking. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An OpenAI chat.completion.chunk line. */
export function oaChunk(content: string | null, extra: Record<string, unknown> = {}): string {
  const delta = content === null ? { role: 'assistant', content: '' } : { content };
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
}

/** Samples the live `tidegate_buffered_bytes` gauge for `ms`, returning the largest value seen. */
export async function sampleBuffered(gwUrl: string, ms: number): Promise<number> {
  let max = 0;
  for (const end = Date.now() + ms; Date.now() < end; ) {
    const text = await (await fetch(`${gwUrl}/metrics`)).text();
    const m = /^tidegate_buffered_bytes (\d+)/m.exec(text);
    if (m) max = Math.max(max, Number(m[1]));
    await sleep(25);
  }
  return max;
}
