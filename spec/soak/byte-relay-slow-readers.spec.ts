/**
 * Hunts a byte-relay hang under slow readers that turn fast (the final drain of bench scenario
 * S1, where a stream getting no byte for a second looks like a hang).
 *
 * Each scenario starts a gateway (`stallTimeoutMs: 0`, `debug.streams`) with a passthrough and an
 * OpenAI route in front of an upstream writing OpenAI chunk events (CJK/emoji content) in bursts
 * per 10 ms tick, honouring write() = false / 'drain', ending with a finish chunk + `data: [DONE]`
 * (or, in bench mode, like bench/upstream.js: a rate per stream, no catch-up after 'drain', the
 * end at a duration even while blocked). Raw-socket clients read through net `onread` into a
 * 512 B..64 KiB buffer; slow ones pause the socket (onread → false) over a byte allowance and a
 * 50 ms timer resumes them, with random full stops; stalled ones read nothing; then every client
 * reads fast. A stream is HUNG when, its client reading fast and the stream not ended, no byte
 * reaches the client for HANG_MS (3 s); a sampler of GET /debug/streams (every ~150 ms, every
 * phase) also flags, seen twice with no byte written between, a read gate holding demand beside
 * an idle bridge (nothing held, batched or unsent, socket not full: nobody will poke it) and a
 * full socket with nothing unsent (a missed 'drain'). Either fails the test with the stream's
 * snapshot. The last test swallows 'drain' on purpose to show the detector catches a missed
 * wake-up (snapshot: socketFull, writableLength 0).
 *
 * The scenarios cover budgets of 32, 40, 64 and 256 KiB; events of 101 B..20 KiB (odd sizes);
 * bursts of 1..5000 events per tick and a bench rate of 10,000 events/s; a gzip upstream
 * (unsized reads); heartbeats off and at 50 ms; fast readers that stop again for a moment.
 *
 * This file: about 42 s alone, under 57 s with 5 copies running at once.
 *
 * Replay/widen: SLOW_READERS_SCENARIO=<name prefix>, SLOW_READERS_SEED, SLOW_READERS_STREAMS,
 * SLOW_READERS_TOTAL (bytes per stream), SLOW_READERS_VERBOSE=1 (per-scenario outcomes, gate
 * states seen, bytes per client).
 */
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import type { StreamSnapshot } from '../../src/gateway/metrics';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport } from '../gateway/helpers';
import { listen } from '../harness/net';
import { rng } from '../harness/relay-harness';

const HANG_MS = 3000;
const TEXT = Array.from('流式传输的背压🌊不会丢字节テスト😀한국어 데이터🚀emoji✨漢字と絵文字🎉');
const CHUNK_HEAD = '{"id":"chatcmpl-soak","object":"chat.completion.chunk","created":1700000000,"model":"soak","choices":[{"index":0,"delta":{"content":';
const CHUNK_TAIL = '},"finish_reason":null}]}';
const FINAL = Buffer.from(
  'data: {"id":"chatcmpl-soak","object":"chat.completion.chunk","created":1700000000,"model":"soak","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
);


function eventOf(bytes: number, offset: number): Buffer {
  let s = '';
  let i = offset;
  const overhead = Buffer.byteLength(`data: ${CHUNK_HEAD}""${CHUNK_TAIL}\n\n`);
  while (Buffer.byteLength(s) < Math.max(4, bytes - overhead)) s += TEXT[i++ % TEXT.length];
  return Buffer.from(`data: ${CHUNK_HEAD}${JSON.stringify(s)}${CHUNK_TAIL}\n\n`);
}

interface UpstreamCfg {
  /** Event sizes, bytes (each stream picks from these). */
  eventBytes: number[];
  /** Events per 10 ms tick: uniform in [min, max]. */
  burst: [number, number];
  /** Bytes each stream writes before its final chunk. */
  totalBytes: number;
  gzip: boolean;
  /**
   * Bench mode (bench/upstream.js): `rate` events/s per stream on a 10 ms ticker, nothing while
   * write() is false (no catch-up after 'drain'), and the stream ends at `durationMs` even while
   * blocked (its backlog then waits in this process); `burst` and `totalBytes` are unused.
   */
  bench?: { rate: number; durationMs: number } | undefined;
}

interface Upstream {
  url: string;
  finished: number;
  close(): Promise<void>;
}

async function burstUpstream(cfg: UpstreamCfg, seed: number): Promise<Upstream> {
  const random = rng(seed);
  const timers = new Set<NodeJS.Timeout>();
  const state = { finished: 0 };
  const server = await listen((req, res) => {
    req.resume();
    const events = cfg.eventBytes.map((b, i) => eventOf(b, i * 7));
    res.writeHead(200, { 'content-type': 'text/event-stream', ...(cfg.gzip ? { 'content-encoding': 'gzip' } : {}) });
    res.flushHeaders();
    const gz = cfg.gzip ? zlib.createGzip() : undefined;
    if (gz !== undefined) gz.pipe(res);
    const out = gz ?? res;
    const sink = gz ?? res;
    let written = 0;
    let k = Math.floor(random() * events.length);
    if (cfg.bench !== undefined) {
      const { rate, durationMs } = cfg.bench;
      const startedAt = Date.now();
      let t0 = startedAt;
      let sent = 0;
      let blocked = false;
      sink.on('drain', () => {
        blocked = false;
        t0 = Date.now();
        sent = 0;
      });
      const ticker = setInterval(() => {
        if (res.destroyed) {
          clearInterval(ticker);
          timers.delete(ticker);
          return;
        }
        if (Date.now() - startedAt >= durationMs) {
          clearInterval(ticker);
          timers.delete(ticker);
          state.finished++;
          out.end(FINAL);
          return;
        }
        if (blocked) return;
        const due = Math.floor(((Date.now() - t0) * rate) / 1000) - sent;
        if (due <= 0) return;
        const n = Math.min(due, 5000);
        sent += due;
        const parts: Buffer[] = [];
        for (let i = 0; i < n; i++) parts.push(events[k++ % events.length] as Buffer);
        if (!out.write(Buffer.concat(parts))) blocked = true;
        if (gz !== undefined) gz.flush(zlib.constants.Z_SYNC_FLUSH);
      }, 10);
      timers.add(ticker);
      return;
    }
    const tick = (): void => {
      if (res.destroyed) return;
      if (written >= cfg.totalBytes) {
        state.finished++;
        out.end(FINAL);
        return;
      }
      const n = cfg.burst[0] + Math.floor(random() * (cfg.burst[1] - cfg.burst[0] + 1));
      const parts: Buffer[] = [];
      for (let i = 0; i < n && written < cfg.totalBytes; i++) {
        const e = events[k++ % events.length] as Buffer;
        parts.push(e);
        written += e.length;
      }
      const ok = out.write(Buffer.concat(parts));
      if (gz !== undefined) gz.flush(zlib.constants.Z_SYNC_FLUSH);
      const again = (): void => {
        const t = setTimeout(() => {
          timers.delete(t);
          tick();
        }, 10);
        timers.add(t);
      };
      if (ok) again();
      else sink.once('drain', again);
    };
    tick();
  });
  return {
    url: server.url,
    get finished() {
      return state.finished;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const t of timers) clearInterval(t);
      await server.close();
    },
  };
}

type Mode = 'slow' | 'stalled' | 'fast';

/** A raw client reading through `onread` into a 512 B buffer; slow mode pauses the socket over its byte allowance. */
class Reader {
  readonly sock: net.Socket;
  mode: Mode;
  bytes = 0;
  lastByteAt = Date.now();
  ended = false;
  paused = false;
  streamId: string | undefined;
  private head = '';
  tail = '';
  private openedAt = Date.now();
  stallUntil = 0;

  constructor(
    port: number,
    path: string,
    mode: Mode,
    readonly rateBps: number,
    readonly bufBytes: number,
  ) {
    this.mode = mode;
    const buffer = Buffer.alloc(bufBytes);
    this.sock = net.connect({ port, host: '127.0.0.1', onread: { buffer, callback: (n: number, buf: Uint8Array) => this.onRead(Buffer.from(buf.buffer, buf.byteOffset, n)) } } as net.NetConnectOpts);
    this.sock.on('error', () => undefined);
    this.sock.on('end', () => (this.ended = true));
    this.sock.on('close', () => (this.ended = true));
    const body = JSON.stringify({ model: 'soak', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    this.sock.write(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  private onRead(buf: Buffer): boolean {
    this.bytes += buf.length;
    this.lastByteAt = Date.now();
    if (this.streamId === undefined && this.head.length < 4096) {
      this.head += buf.toString('latin1');
      const m = /x-tidegate-stream-id: ([0-9a-f-]+)/i.exec(this.head);
      if (m) this.streamId = m[1];
    }
    this.tail = (this.tail + buf.toString('latin1')).slice(-64);
    return this.wantMore();
  }

  private wantMore(): boolean {
    if (this.mode === 'fast') return true;
    if (this.mode === 'stalled') return this.pause();
    if (Date.now() < this.stallUntil) return this.pause();
    const allowed = ((Date.now() - this.openedAt) * this.rateBps) / 1000;
    if (this.bytes >= allowed) return this.pause();
    return true;
  }

  private pause(): false {
    this.paused = true;
    return false;
  }

  tick(): void {
    if (!this.paused || this.ended) return;
    if (this.mode === 'stalled') return;
    if (this.mode === 'slow' && (Date.now() < this.stallUntil || this.bytes >= ((Date.now() - this.openedAt) * this.rateBps) / 1000)) return;
    this.paused = false;
    this.sock.resume();
  }

  goFast(): void {
    this.mode = 'fast';
    this.lastByteAt = Date.now();
    this.paused = false;
    this.sock.resume();
  }

  destroy(): void {
    this.sock.destroy();
  }
}

interface Scenario {
  name: string;
  seed: number;
  streams: number;
  maxBufferedBytes: number;
  heartbeatMs: number;
  up: UpstreamCfg;
  /** ms of slow/stalled reading before every client turns fast. */
  slowMs: number;
  /** Client read buffer sizes to pick from. */
  readBufs: number[];
  /** Slow readers' rates, bytes/s. */
  rates: number[];
  /** Fraction of clients that never read before the switch. */
  stalledShare: number;
  /** Fraction of clients on the passthrough route (the rest on the OpenAI route). */
  passthroughShare: number;
  /** Slow readers' random full stops (probability per 50 ms tick, length ms). */
  stops: [number, number];
  /** Fast readers that stop again for a moment (probability per 50 ms tick, ms). */
  fastStops?: [number, number] | undefined;
  /** Self-check only: the gateway's responses never hear 'drain' (a missed wake-up made on purpose). */
  swallowDrain?: boolean | undefined;
}

interface HangReport {
  scenario: string;
  route: string;
  mode: string;
  silentMs: number;
  bytes: number;
  tail: string;
  snapshot: StreamSnapshot | undefined | string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function runScenario(s: Scenario): Promise<{ hangs: HangReport[]; unfinished: number; completed: number; outcomes: Record<string, number> }> {
  const random = rng(s.seed * 7919);
  const up = await burstUpstream(s.up, s.seed);
  const logs = new CaptureTransport();
  let gw: RunningGateway | undefined;
  const readers: Reader[] = [];
  let slowTimer: NodeJS.Timeout | undefined;
  const stuck: HangReport[] = [];
  const gateStats: Record<string, number> = {};
  let stopSampler: () => Promise<void> = async () => undefined;
  const emit = http.ServerResponse.prototype.emit;
  if (s.swallowDrain === true) {
    http.ServerResponse.prototype.emit = function (this: http.ServerResponse, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'drain' && this.getHeader('x-tidegate-stream-id') !== undefined) return false;
      return emit.call(this, event, ...args);
    } as typeof emit;
  }
  try {
    gw = await startGateway(
      parseConfig({
        port: 0,
        upstream: { url: up.url },
        retry: { maxAttempts: 1 },
        stream: { maxBufferedBytes: s.maxBufferedBytes, stallTimeoutMs: 0, heartbeatMs: s.heartbeatMs },
        debug: { streams: true },
        routes: [
          { path: '/sse', provider: 'passthrough', url: up.url },
          { path: '/v1/chat/completions', provider: 'openai', url: up.url },
        ],
      }),
      { logger: createLogger({ transports: [logs] }) },
    );
    const port = gw.port;
    const gwUrl = gw.url;
    // The read gate holding demand beside an idle bridge (nothing held, batched or unsent, socket
    // not full) at a macrotask boundary: nothing will poke it (only a heartbeat could). Seen twice
    // in a row with no byte written in between, the stream is stuck at the gate.
    let sampling = true;
    const seenIdle = new Map<string, number>();
    const sampler = (async () => {
      while (sampling) {
        await sleep(150);
        if (!sampling) break;
        const body = (await (await fetch(`${gwUrl}/debug/streams`)).json()) as { streams: StreamSnapshot[] };
        for (const x of body.streams) {
          const b = x.bridge;
          if ((x.heldReadDemand ?? 0) > 0) {
            const key = b === undefined ? 'nobridge' : `held:${b.socketFull ? 'full' : 'open'}:${b.writableLength > 0 ? 'wl' : 'nowl'}:${b.batchBytes > 0 ? 'batch' : ''}`;
            gateStats[key] = (gateStats[key] ?? 0) + 1;
          } else gateStats.notHeld = (gateStats.notHeld ?? 0) + 1;
          const gateStuck = b !== undefined && !b.finished && !b.upstreamDone && !b.socketFull && b.writableLength === 0 && b.batchBytes === 0 && b.heldBytes === 0 && (x.heldReadDemand ?? 0) > 0;
          // A full socket with nothing left unsent: its 'drain' was missed.
          const drainMissed = b !== undefined && !b.finished && b.socketFull && b.writableLength === 0;
          const idle = gateStuck || drainMissed;
          if (!idle) {
            seenIdle.delete(x.streamId);
            continue;
          }
          const before = seenIdle.get(x.streamId);
          if (before === b.bytes && !stuck.some((h) => (h.snapshot as StreamSnapshot | undefined)?.streamId === x.streamId)) {
            const r = readers.find((y) => y.streamId === x.streamId);
            stuck.push({ scenario: s.name, route: x.route, mode: r?.mode ?? '?', silentMs: r === undefined ? -1 : Date.now() - r.lastByteAt, bytes: r?.bytes ?? -1, tail: JSON.stringify(r?.tail ?? ''), snapshot: x });
          }
          seenIdle.set(x.streamId, b.bytes);
        }
      }
    })();
    stopSampler = async () => {
      sampling = false;
      await sampler;
    };
    for (let i = 0; i < s.streams; i++) {
      const mode: Mode = random() < s.stalledShare ? 'stalled' : 'slow';
      const path = random() < s.passthroughShare ? '/sse' : '/v1/chat/completions';
      readers.push(new Reader(port, path, mode, s.rates[i % s.rates.length] as number, s.readBufs[i % s.readBufs.length] as number));
    }
    slowTimer = setInterval(() => {
      const now = Date.now();
      for (const r of readers) {
        if (r.mode === 'slow' && random() < s.stops[0]) r.stallUntil = now + random() * s.stops[1];
        r.tick();
      }
    }, 50);
    await sleep(s.slowMs);
    clearInterval(slowTimer);
    slowTimer = undefined;
    for (const r of readers) r.goFast();
    // Fast phase: watch every stream; a stream silent for HANG_MS while open is hung.
    const hangs: HangReport[] = [];
    const hung = new Set<Reader>();
    const t0 = Date.now();
    let sampledAt = Date.now();
    while (Date.now() - t0 < 40_000 && readers.some((r) => !r.ended && !hung.has(r))) {
      await sleep(100);
      await new Promise((r) => setImmediate(r));
      const now = Date.now();
      // This process starved (a late timer): nobody could read meanwhile; restart the clocks.
      if (now - sampledAt > 1000) for (const r of readers) r.lastByteAt = Math.max(r.lastByteAt, now - 100);
      sampledAt = now;
      if (s.fastStops !== undefined) {
        for (const r of readers) {
          if (r.ended || random() >= s.fastStops[0]) continue;
          r.sock.pause();
          const ms = random() * s.fastStops[1];
          setTimeout(() => {
            r.lastByteAt = Math.max(r.lastByteAt, Date.now());
            r.sock.resume();
          }, ms).unref();
          r.lastByteAt = now + ms;
        }
      }
      const silent = readers.filter((r) => !r.ended && !hung.has(r) && now - r.lastByteAt >= HANG_MS);
      if (silent.length === 0) continue;
      const body = (await (await fetch(`${gw.url}/debug/streams`)).json()) as { streams: StreamSnapshot[] };
      // Re-check after the fetch: a byte may have arrived meanwhile.
      for (const r of silent) {
        if (r.ended || Date.now() - r.lastByteAt < HANG_MS) continue;
        hung.add(r);
        hangs.push({
          scenario: s.name,
          route: r.streamId === undefined ? '?' : (body.streams.find((x) => x.streamId === r.streamId)?.route ?? 'not live'),
          mode: r.mode,
          silentMs: Date.now() - r.lastByteAt,
          bytes: r.bytes,
          tail: JSON.stringify(r.tail),
          snapshot: r.streamId === undefined ? 'no stream id (headers never arrived)' : body.streams.find((x) => x.streamId === r.streamId),
        });
      }
    }
    await stopSampler();
    hangs.push(...stuck);
    const unfinished = readers.filter((r) => !r.ended).length;
    const outcomes: Record<string, number> = {};
    for (const l of logs.streams()) {
      const k = `${String(l.outcome)}${l.errorCode === undefined ? '' : `:${String(l.errorCode)}`}`;
      outcomes[k] = (outcomes[k] ?? 0) + 1;
    }
    const completed = readers.filter((r) => r.tail.includes('data: [DONE]') || r.tail.includes('0\r\n\r\n')).length;
    if (process.env.SLOW_READERS_VERBOSE !== undefined) {
      console.log(s.name, { fastMs: Date.now() - t0, gateStats, outcomes, unfinished, completed, bytes: readers.map((r) => r.bytes).join(','), heads: [...new Set(readers.map((r) => r.tail.slice(-20)))].slice(0, 5) });
    }
    return { hangs, unfinished, completed, outcomes };
  } finally {
    http.ServerResponse.prototype.emit = emit;
    await stopSampler();
    if (slowTimer !== undefined) clearInterval(slowTimer);
    for (const r of readers) r.destroy();
    await gw?.close();
    await up.close();
  }
}

function describeHangs(hangs: HangReport[]): string {
  return hangs
    .slice(0, 3)
    .map((h) => JSON.stringify(h, null, 1))
    .join('\n');
}

const OPENAI_175 = [175];
const ODD_SIZES = [101, 173, 977, 1531, 4099, 8191, 9973];

const scenarios: Scenario[] = [
  {
    name: 'S1-like: 64 KiB budget, 175 B events in bursts up to 1000/tick, half stalled half slow',
    seed: 1,
    streams: 40,
    maxBufferedBytes: 65536,
    heartbeatMs: 0,
    up: { eventBytes: OPENAI_175, burst: [1, 1000], totalBytes: 3 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512],
    rates: [2048],
    stalledShare: 0.5,
    passthroughShare: 0.3,
    stops: [0.02, 800],
  },
  {
    name: 'odd event sizes up to 20 KiB, heartbeats 50 ms, 32 KiB budget, read sizes 512..16K',
    seed: 2,
    streams: 30,
    maxBufferedBytes: 32768,
    heartbeatMs: 50,
    up: { eventBytes: ODD_SIZES, burst: [1, 60], totalBytes: 3 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512, 1000, 4096, 16384],
    rates: [1024, 2048, 8192],
    stalledShare: 0.3,
    passthroughShare: 0.5,
    stops: [0.05, 1000],
    fastStops: [0.01, 500],
  },
  {
    name: 'gzip upstream (unsized reads), 256 KiB budget, steady bursts, heartbeats off',
    seed: 3,
    streams: 30,
    maxBufferedBytes: 262144,
    heartbeatMs: 0,
    up: { eventBytes: [175, 333, 2049], burst: [50, 500], totalBytes: 3 << 20, gzip: true },
    slowMs: 3000,
    readBufs: [512, 2048],
    rates: [2048],
    stalledShare: 0.5,
    passthroughShare: 0.5,
    stops: [0.02, 800],
  },
  {
    name: '60 streams, 64 KiB budget, bursts 1..5000 events, fast readers that stop again',
    seed: 4,
    streams: 60,
    maxBufferedBytes: 65536,
    heartbeatMs: 50,
    up: { eventBytes: [175, 177, 181], burst: [1, 5000], totalBytes: 2 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512],
    rates: [512, 2048, 4096],
    stalledShare: 0.5,
    passthroughShare: 0.2,
    stops: [0.03, 600],
    fastStops: [0.02, 300],
  },
  {
    name: 'gate regime: 32 KiB budget, heartbeats off, readers at 16..256 KB/s with stops, 175 B events',
    seed: 5,
    streams: 40,
    maxBufferedBytes: 32768,
    heartbeatMs: 0,
    up: { eventBytes: [175, 176, 1999], burst: [1, 2000], totalBytes: 3 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512, 4096, 65536],
    rates: [16384, 65536, 262144],
    stalledShare: 0.1,
    passthroughShare: 0.5,
    stops: [0.05, 400],
    fastStops: [0.02, 200],
  },
  {
    name: 'gzip upstream on a 64 KiB budget (event relay, demand in bytes), heartbeats off',
    seed: 6,
    streams: 30,
    maxBufferedBytes: 65536,
    heartbeatMs: 0,
    up: { eventBytes: [175, 4097, 12289], burst: [1, 300], totalBytes: 3 << 20, gzip: true },
    slowMs: 3000,
    readBufs: [512, 8192],
    rates: [2048, 65536],
    stalledShare: 0.4,
    passthroughShare: 0.5,
    stops: [0.03, 600],
  },
  {
    name: 'default 256 KiB budget, odd sizes up to 20 KiB, heartbeats off',
    seed: 7,
    streams: 40,
    maxBufferedBytes: 262144,
    heartbeatMs: 0,
    up: { eventBytes: [101, 173, 977, 4099, 9973, 20011], burst: [1, 200], totalBytes: 4 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512, 1000, 16384],
    rates: [2048, 32768],
    stalledShare: 0.4,
    passthroughShare: 0.5,
    stops: [0.03, 800],
    fastStops: [0.01, 300],
  },
  {
    name: 'tight 40 KiB budget (byte relay, 8 KiB reserve toggling with writableLength), readers near the upstream rate',
    seed: 10,
    streams: 40,
    maxBufferedBytes: 40960,
    heartbeatMs: 0,
    up: { eventBytes: [175, 2047, 6143], burst: [5, 60], totalBytes: 3 << 20, gzip: false },
    slowMs: 3000,
    readBufs: [512, 2048, 16384],
    rates: [100_000, 300_000, 1_000_000],
    stalledShare: 0,
    passthroughShare: 0.5,
    stops: [0.1, 150],
    fastStops: [0.05, 100],
  },
  {
    name: 'bench S1 upstream: 10,000 events/s per stream ending at 5 s while blocked, 64 KiB budget, 6 s slow/stalled',
    seed: 8,
    streams: 30,
    maxBufferedBytes: 65536,
    heartbeatMs: 0,
    up: { eventBytes: [175], burst: [0, 0], totalBytes: 0, gzip: false, bench: { rate: 10_000, durationMs: 5000 } },
    slowMs: 6000,
    readBufs: [512],
    rates: [2048],
    stalledShare: 0.5,
    passthroughShare: 0.3,
    stops: [0, 0],
  },
];

const only = process.env.SLOW_READERS_SCENARIO;
const seedOverride = process.env.SLOW_READERS_SEED === undefined ? undefined : Number(process.env.SLOW_READERS_SEED);

describe('byte relay under slow readers that turn fast', () => {
  jest.setTimeout(58_000);
  for (const base of scenarios) {
    let s = seedOverride === undefined ? base : { ...base, seed: seedOverride };
    if (process.env.SLOW_READERS_TOTAL !== undefined) s = { ...s, up: { ...s.up, totalBytes: Number(process.env.SLOW_READERS_TOTAL) } };
    if (process.env.SLOW_READERS_STREAMS !== undefined) s = { ...s, streams: Number(process.env.SLOW_READERS_STREAMS) };
    const run = only === undefined || base.name.startsWith(only) ? it : it.skip;
    run(`every stream keeps moving once its client reads fast: ${s.name}`, async () => {
      const { hangs, unfinished, outcomes } = await runScenario(s);
      if (hangs.length > 0) throw new Error(`${hangs.length} hung stream(s):\n${describeHangs(hangs)}`);
      expect(unfinished).toBe(0);
      expect(outcomes).toEqual({ completed: s.streams });
    });
  }

  it("reports a stream whose bridge never hears 'drain', with its snapshot (self-check of the hang detector)", async () => {
    const { hangs } = await runScenario({
      name: 'self-check',
      seed: 9,
      streams: 3,
      maxBufferedBytes: 65536,
      heartbeatMs: 0,
      up: { eventBytes: [175], burst: [50, 200], totalBytes: 8 << 20, gzip: false },
      slowMs: 1500,
      readBufs: [512],
      rates: [2048],
      stalledShare: 1,
      passthroughShare: 0.5,
      stops: [0, 0],
      swallowDrain: true,
    });
    expect(hangs.length).toBeGreaterThan(0);
    if (process.env.SLOW_READERS_VERBOSE !== undefined) console.log(describeHangs(hangs));
    const snap = hangs[0]?.snapshot as StreamSnapshot;
    expect(snap.bridge?.socketFull).toBe(true);
    expect(snap.bridge?.writableLength).toBe(0);
  });
});
