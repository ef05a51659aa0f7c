import { EventEmitter } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { anthropicDialect } from './anthropic';
import { faultStatus, parseFault, SimFault } from './faults';
import { openaiDialect } from './openai';
import { SimDialect, SimFinishReason, SimResponseContext } from './protocol';
import { BUILTIN_TRANSCRIPTS, findTranscript, Transcript } from './transcripts';

/** Options of {@link createSimulator}; all may be changed later with `configure()`. */
export interface SimulatorOptions {
  /** Replay rate in tokens per second (default 50). `Infinity`: as fast as backpressure allows. */
  tokensPerSecond?: number | undefined;
  /** Time to first token in ms: delay between the request and the status line (default 300). */
  ttftMs?: number | undefined;
  /** Transcript for a `model` that names none (default `'sim'`). */
  defaultTranscript?: string | undefined;
  /** Extra transcripts by name; they shadow the built-in ones. */
  transcripts?: Readonly<Record<string, Transcript>> | undefined;
  /** Fault for requests without an `x-sim-fault` header (default `'none'`). */
  fault?: SimFault | undefined;
  /** Tokens written before a mid-stream fault (default 3; capped at the transcript length). */
  faultAfterTokens?: number | undefined;
  /** `Retry-After` value in seconds for `status:429|503|529` (default 1). */
  retryAfterSeconds?: number | undefined;
  /** Split multi-byte characters across two writes for every transcript (default false). */
  splitUtf8?: boolean | undefined;
  /** Pause between the two halves of a split frame, ms (default 5). */
  splitDelayMs?: number | undefined;
  /** Largest request body accepted, bytes (default 1 MiB); larger gets 413. */
  maxBodyBytes?: number | undefined;
  /** Honour the `x-sim-*` request headers (default true). */
  allowHeaderOverrides?: boolean | undefined;
  /** How many finished request records `requests` keeps (default 1000). */
  maxRecords?: number | undefined;
}

/** How a simulated exchange ended. */
export type SimRequestOutcome =
  | 'active' // still running
  | 'completed' // the whole response was written and flushed
  | 'aborted' // the client left before the response finished
  | 'faulted' // an injected fault ended it (status, error-midstream, truncate, reset)
  | 'rejected' // a malformed request got a 4xx
  | 'closed'; // the simulator was closed while it ran

/** What the simulator saw and did for one API request. Updated live while `outcome` is `'active'`. */
export interface SimRequestRecord {
  /** `sim-<n>`, also sent as the `x-request-id` response header. */
  readonly id: string;
  readonly route: 'openai' | 'anthropic';
  /** The request's `model` field ('' until the body is parsed). */
  readonly model: string;
  /** The transcript replayed ('' if none). */
  readonly transcript: string;
  readonly stream: boolean;
  readonly fault: SimFault;
  /** HTTP status sent (0 before the status line). */
  readonly status: number;
  /** `Date.now()` at arrival and at the end (`undefined` while active). */
  readonly startedAt: number;
  readonly endedAt: number | undefined;
  /** Response body bytes handed to `res.write()`/`res.end()`. */
  readonly bytesWritten: number;
  /** Content tokens written. */
  readonly tokensWritten: number;
  /** Times `res.write()` returned false and the simulator waited for 'drain'. */
  readonly drainWaits: number;
  readonly outcome: SimRequestOutcome;
}

/** Counters over all API requests since start (health checks and 404s excluded). */
export interface SimulatorStats {
  readonly requests: number;
  readonly active: number;
  readonly completed: number;
  readonly aborted: number;
  readonly faulted: number;
  readonly rejected: number;
  readonly closed: number;
  /** Response body bytes written, all requests. */
  readonly bytesWritten: number;
  /** Times any response waited for 'drain'. */
  readonly drainWaits: number;
}

/** Events of a {@link Simulator}; listeners get the request's record. */
export interface SimulatorEvents {
  /** A valid API request was parsed and its response is about to start. */
  request: (record: SimRequestRecord) => void;
  /** An exchange ended, whatever the outcome. */
  'request-end': (record: SimRequestRecord) => void;
  /** The client left before the response finished (emitted before 'request-end'). */
  'request-aborted': (record: SimRequestRecord) => void;
}

/** A running (or ready) simulated upstream. */
export interface Simulator {
  /** The underlying server (not listening until `listen()`). */
  readonly server: http.Server;
  /** `http://host:port` once listening. OpenAI SDK `baseURL` is `${url}/v1`; Anthropic's is `url`. */
  readonly url: string | undefined;
  /** A snapshot of the counters. */
  readonly stats: SimulatorStats;
  /** Active and recent request records, oldest first (at most `maxRecords` finished ones). */
  readonly requests: readonly SimRequestRecord[];
  /** Starts listening; `port` 0 (default) picks a free one, `host` defaults to 127.0.0.1. */
  listen(port?: number, host?: string): Promise<{ port: number; url: string }>;
  /** Destroys running responses (outcome `'closed'`), closes every connection and the server. */
  close(): Promise<void>;
  /** Changes options for requests that arrive from now on. */
  configure(options: SimulatorOptions): void;
  on<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
  once<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
  off<K extends keyof SimulatorEvents>(event: K, listener: SimulatorEvents[K]): Simulator;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Settings = Required<Omit<SimulatorOptions, 'transcripts'>> & { transcripts: Readonly<Record<string, Transcript>> };

const DEFAULTS: Settings = {
  tokensPerSecond: 50,
  ttftMs: 300,
  defaultTranscript: 'sim',
  transcripts: {},
  fault: 'none',
  faultAfterTokens: 3,
  retryAfterSeconds: 1,
  splitUtf8: false,
  splitDelayMs: 5,
  maxBodyBytes: 1024 * 1024,
  allowHeaderOverrides: true,
  maxRecords: 1000,
};

const ROUTES: Record<string, { route: SimRequestRecord['route']; dialect: SimDialect }> = {
  '/v1/chat/completions': { route: 'openai', dialect: openaiDialect },
  '/v1/messages': { route: 'anthropic', dialect: anthropicDialect },
};

/** Tokens written synchronously in unlimited mode before yielding to the event loop. */
const UNLIMITED_BATCH = 64;

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Exchange {
  readonly record: Mutable<SimRequestRecord>;
  readonly res: http.ServerResponse;
  readonly ended: AbortController;
  /** The outcome to report if the response finishes, or if we destroy it ourselves. */
  endAs: SimRequestOutcome;
  destroyedByUs: boolean;
}

/** Merges `patch` over `base`, skipping keys whose value is `undefined`. */
function merge(base: Settings, patch: SimulatorOptions): Settings {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) out[k] = v;
  return out as Settings;
}

function validateSettings(s: Settings): void {
  if (!(s.tokensPerSecond > 0)) throw new RangeError(`tokensPerSecond must be > 0, got ${s.tokensPerSecond}`);
  for (const k of ['ttftMs', 'faultAfterTokens', 'retryAfterSeconds', 'splitDelayMs', 'maxBodyBytes', 'maxRecords'] as const) {
    if (!(Number.isFinite(s[k]) && s[k] >= 0)) throw new RangeError(`${k} must be a finite number >= 0, got ${s[k]}`);
  }
  if (parseFault(s.fault) === undefined) throw new RangeError(`unknown fault ${JSON.stringify(s.fault)}`);
}

/** Resolves after `ms`, or early with `false` when `signal` aborts. Leaves no timer or listener. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function yieldToLoop(signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => setImmediate(() => resolve(!signal.aborted)));
}

/** Index just after the lead byte of the first multi-byte UTF-8 character, or -1. */
function splitPoint(buf: Buffer): number {
  for (let i = 0; i < buf.length; i++) if (buf[i] >= 0xc0) return i + 1;
  return -1;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onEnd);
    };
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > maxBytes) {
        cleanup();
        req.resume();
        reject(new RequestError(413, `request body exceeds ${maxBytes} bytes`));
        return;
      }
      parts.push(c);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(parts));
    };
    const onError = (e: Error): void => {
      cleanup();
      reject(e);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    // 'close' without 'end': the client left mid-body; the response's 'close' reports it.
    req.on('close', onEnd);
  });
}

/**
 * Creates the simulated LLM upstream: an HTTP/1.1 server (plain `node:http`) speaking
 * OpenAI Chat Completions (`POST /v1/chat/completions`) and Anthropic Messages
 * (`POST /v1/messages`), streaming (`stream: true`, SSE) or not, that replays recorded
 * transcripts at `tokensPerSecond` after `ttftMs`. Also `GET /healthz` and `GET /v1/models`.
 *
 * Transcript choice: the `x-sim-transcript` header, else the body's `model` if it names a
 * transcript (`sim`, `sim-basic`, `sim-long`, `sim-claude`, `sim-zh`, `sim-zh-split`,
 * `sim-synthetic-<n>`, or one passed in `transcripts`), else `defaultTranscript`. The
 * response echoes the requested `model`. `max_tokens` (and OpenAI `max_completion_tokens`)
 * cut the transcript and finish with `length` / `max_tokens`.
 *
 * Per-request headers (when `allowHeaderOverrides`): `x-sim-transcript`, `x-sim-fault`
 * (see {@link SimFault}), `x-sim-fault-after` (tokens), `x-sim-tokens-per-second` (a number or
 * `Infinity`), `x-sim-ttft-ms`, `x-sim-split-utf8` (`1`/`true`). A bad value gets 400.
 *
 * Backpressure: every frame is one `res.write()`; when it returns false nothing more is
 * written until 'drain' (counted in `drainWaits`). Non-stream responses wait `ttftMs` only.
 * A response whose `'close'` comes before it finished is counted as aborted and emits
 * `'request-aborted'`; its timers stop at once.
 *
 * @example
 * const sim = createSimulator({ tokensPerSecond: 200, ttftMs: 50 });
 * const { url } = await sim.listen();
 * const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x' });
 * // …
 * await sim.close();
 */
export function createSimulator(options: SimulatorOptions = {}): Simulator {
  let settings: Settings = merge(DEFAULTS, options);
  validateSettings(settings);
  const emitter = new EventEmitter();
  const counters: Mutable<SimulatorStats> = {
    requests: 0,
    active: 0,
    completed: 0,
    aborted: 0,
    faulted: 0,
    rejected: 0,
    closed: 0,
    bytesWritten: 0,
    drainWaits: 0,
  };
  const records: Mutable<SimRequestRecord>[] = [];
  const live = new Set<Exchange>();
  const sockets = new Set<Socket>();
  let seq = 0;
  let closing = false;
  let url: string | undefined;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Programming errors only: requests' own failures are answered inside handle().
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err), type: 'server_error' } }));
      } else {
        res.destroy();
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  function registry(): Readonly<Record<string, Transcript>> {
    return { ...BUILTIN_TRANSCRIPTS, ...settings.transcripts };
  }

  function pushRecord(record: Mutable<SimRequestRecord>): void {
    records.push(record);
    // Trim finished records beyond the cap; active ones are always kept.
    let excess = records.length - settings.maxRecords - live.size;
    for (let i = 0; excess > 0 && i < records.length; ) {
      if (records[i].outcome !== 'active') {
        records.splice(i, 1);
        excess--;
      } else i++;
    }
  }

  function finalize(ex: Exchange): void {
    const r = ex.record;
    if (r.outcome !== 'active') return;
    if (ex.destroyedByUs || ex.res.writableFinished) r.outcome = ex.endAs;
    else r.outcome = closing ? 'closed' : 'aborted';
    r.endedAt = Date.now();
    live.delete(ex);
    counters.active--;
    counters[r.outcome as 'completed' | 'aborted' | 'faulted' | 'rejected' | 'closed']++;
    ex.ended.abort();
    if (r.outcome === 'aborted') emitter.emit('request-aborted', r);
    emitter.emit('request-end', r);
  }

  async function write(ex: Exchange, data: Buffer): Promise<boolean> {
    const signal = ex.ended.signal;
    if (signal.aborted) return false;
    ex.record.bytesWritten += data.length;
    counters.bytesWritten += data.length;
    if (ex.res.write(data)) return true;
    ex.record.drainWaits++;
    counters.drainWaits++;
    return new Promise((resolve) => {
      const onDrain = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const onAbort = (): void => {
        ex.res.off('drain', onDrain);
        resolve(false);
      };
      ex.res.once('drain', onDrain);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async function writeFrame(ex: Exchange, text: string, splitUtf8: boolean, splitDelayMs: number): Promise<boolean> {
    const buf = Buffer.from(text, 'utf8');
    const at = splitUtf8 ? splitPoint(buf) : -1;
    if (at < 0) return write(ex, buf);
    // The pause keeps the halves in separate TCP segments, so the reader sees the cut.
    return (
      (await write(ex, buf.subarray(0, at))) &&
      (await sleep(splitDelayMs, ex.ended.signal)) &&
      write(ex, buf.subarray(at))
    );
  }

  function end(ex: Exchange, outcome: SimRequestOutcome, data?: Buffer): void {
    ex.endAs = outcome;
    if (data) {
      ex.record.bytesWritten += data.length;
      counters.bytesWritten += data.length;
    }
    ex.res.end(data);
  }

  function sendJson(ex: Exchange, status: number, body: unknown, outcome: SimRequestOutcome, extra: http.OutgoingHttpHeaders = {}): void {
    const data = Buffer.from(JSON.stringify(body), 'utf8');
    ex.record.status = status;
    ex.res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': data.length,
      'x-request-id': ex.record.id,
      ...extra,
    });
    end(ex, outcome, data);
  }

  function overrides(req: http.IncomingMessage, s: Settings): {
    transcript?: string;
    fault: SimFault;
    faultAfterTokens: number;
    tokensPerSecond: number;
    ttftMs: number;
    splitUtf8: boolean;
  } {
    const out = {
      transcript: undefined as string | undefined,
      fault: s.fault,
      faultAfterTokens: s.faultAfterTokens,
      tokensPerSecond: s.tokensPerSecond,
      ttftMs: s.ttftMs,
      splitUtf8: s.splitUtf8,
    };
    if (!s.allowHeaderOverrides) return out;
    out.transcript = header(req, 'x-sim-transcript');
    const fault = header(req, 'x-sim-fault');
    if (fault !== undefined) {
      const f = parseFault(fault);
      if (f === undefined) throw new RequestError(400, `unknown x-sim-fault ${JSON.stringify(fault)}`);
      out.fault = f;
    }
    const num = (name: string, min: number, allowInfinity: boolean): number | undefined => {
      const v = header(req, name);
      if (v === undefined) return undefined;
      const n = allowInfinity && /^infinity$/i.test(v.trim()) ? Infinity : Number(v);
      if (v.trim() === '' || Number.isNaN(n) || n < min || (!allowInfinity && !Number.isFinite(n))) {
        throw new RequestError(400, `bad ${name} ${JSON.stringify(v)}`);
      }
      return n;
    };
    out.faultAfterTokens = num('x-sim-fault-after', 0, false) ?? out.faultAfterTokens;
    out.ttftMs = num('x-sim-ttft-ms', 0, false) ?? out.ttftMs;
    const tps = num('x-sim-tokens-per-second', Number.MIN_VALUE, true);
    if (tps !== undefined) out.tokensPerSecond = tps;
    const split = header(req, 'x-sim-split-utf8');
    if (split !== undefined) out.splitUtf8 = /^(1|true|yes)$/i.test(split.trim());
    return out;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      const data = Object.values(registry()).map((t) => ({ id: t.name, object: 'model', created: 0, owned_by: 'tidegate-simulator' }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data }));
      return;
    }
    const target = ROUTES[path];
    if (!target || req.method !== 'POST') {
      req.resume();
      res.writeHead(target ? 405 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `${req.method} ${path} is not served by the simulator`, type: 'invalid_request_error' } }));
      return;
    }

    const s = settings;
    const n = ++seq;
    const record: Mutable<SimRequestRecord> = {
      id: `sim-${n}`,
      route: target.route,
      model: '',
      transcript: '',
      stream: false,
      fault: 'none',
      status: 0,
      startedAt: Date.now(),
      endedAt: undefined,
      bytesWritten: 0,
      tokensWritten: 0,
      drainWaits: 0,
      outcome: 'active',
    };
    const ex: Exchange = { record, res, ended: new AbortController(), endAs: 'completed', destroyedByUs: false };
    counters.requests++;
    counters.active++;
    live.add(ex);
    pushRecord(record);
    res.once('close', () => finalize(ex));

    const { dialect } = target;
    let body: Record<string, unknown>;
    let o: ReturnType<typeof overrides>;
    let transcript: Transcript;
    try {
      o = overrides(req, s);
      const raw = await readBody(req, s.maxBodyBytes);
      if (ex.ended.signal.aborted) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new RequestError(400, 'request body is not valid JSON');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new RequestError(400, 'request body must be a JSON object');
      }
      body = parsed as Record<string, unknown>;
      const model = typeof body.model === 'string' ? body.model : '';
      record.model = model;
      const reg = registry();
      if (o.transcript !== undefined) {
        const t = findTranscript(o.transcript, reg);
        if (!t) throw new RequestError(400, `unknown x-sim-transcript ${JSON.stringify(o.transcript)}`);
        transcript = t;
      } else {
        const t = findTranscript(model, reg) ?? findTranscript(s.defaultTranscript, reg);
        if (!t) throw new RequestError(500, `default transcript ${JSON.stringify(s.defaultTranscript)} does not exist`);
        transcript = t;
      }
    } catch (err) {
      if (ex.ended.signal.aborted) return;
      const status = err instanceof RequestError ? err.status : 400;
      sendJson(ex, status, dialect.errorBody(status, err instanceof Error ? err.message : String(err)), 'rejected', { connection: 'close' });
      return;
    }

    record.transcript = transcript.name;
    record.stream = body.stream === true;
    record.fault = o.fault;
    emitter.emit('request', record);

    const ctx: SimResponseContext = {
      id: target.route === 'openai' ? `chatcmpl-sim${n}` : `msg_sim${n}`,
      model: record.model || transcript.name,
      created: Math.floor(record.startedAt / 1000),
      promptTokens: Math.max(1, Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? '').length / 4)),
      includeUsage:
        typeof body.stream_options === 'object' &&
        body.stream_options !== null &&
        (body.stream_options as Record<string, unknown>).include_usage === true,
    };

    const status = faultStatus(o.fault);
    if (status !== undefined) {
      const retry = status === 429 || status === 503 || status === 529 ? { 'retry-after': String(s.retryAfterSeconds) } : undefined;
      sendJson(ex, status, dialect.errorBody(status, `Simulated HTTP ${status} (x-sim-fault).`), 'faulted', retry);
      return;
    }

    const max = dialect.maxTokens(body);
    const total = transcript.tokens.length;
    const limit = max !== undefined && max < total ? max : total;
    const reason: SimFinishReason = limit < total ? 'length' : 'stop';

    if (!(await sleep(o.ttftMs, ex.ended.signal))) return;

    if (!record.stream) {
      if (o.fault !== 'none' && o.fault !== 'hang') {
        // Mid-stream faults have no middle here; reset and stall still apply.
        if (o.fault === 'reset') return reset(ex);
        if (o.fault === 'stall') return;
        sendJson(ex, 500, dialect.errorBody(500, 'The server had an error while processing your request.'), 'faulted');
        return;
      }
      if (o.fault === 'hang') {
        record.status = 200;
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': record.id });
        res.flushHeaders();
        return;
      }
      let text = '';
      for (let i = 0; i < limit; i++) text += transcript.tokens[i];
      record.tokensWritten = limit;
      sendJson(ex, 200, dialect.completion(ctx, text, reason, limit), 'completed');
      return;
    }

    record.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': record.id,
      'x-sim-transcript': transcript.name,
    });
    if (o.fault === 'hang') {
      res.flushHeaders();
      return;
    }
    const split = o.splitUtf8 || transcript.splitUtf8 === true;
    for (const f of dialect.preamble(ctx)) {
      if (!(await writeFrame(ex, f, split, s.splitDelayMs))) return;
    }

    const midFault = o.fault !== 'none';
    const faultAt = Math.min(o.faultAfterTokens, limit);
    const intervalMs = Number.isFinite(o.tokensPerSecond) ? 1000 / o.tokensPerSecond : 0;
    const start = Date.now();
    for (let i = 0; i <= limit; i++) {
      if (midFault && i === faultAt) return midStreamFault(ex, dialect, o.fault);
      if (i === limit) break;
      if (intervalMs > 0) {
        const wait = start + i * intervalMs - Date.now();
        if (wait > 0 && !(await sleep(wait, ex.ended.signal))) return;
      } else if (i % UNLIMITED_BATCH === UNLIMITED_BATCH - 1 && !(await yieldToLoop(ex.ended.signal))) {
        return;
      }
      if (!(await writeFrame(ex, dialect.token(ctx, transcript.tokens[i]), split, s.splitDelayMs))) return;
      record.tokensWritten++;
    }
    for (const f of dialect.finish(ctx, reason, limit)) {
      if (!(await writeFrame(ex, f, split, s.splitDelayMs))) return;
    }
    end(ex, 'completed');
  }

  function reset(ex: Exchange): void {
    ex.endAs = 'faulted';
    ex.destroyedByUs = true;
    const socket = ex.res.socket;
    if (socket && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else ex.res.destroy();
  }

  function midStreamFault(ex: Exchange, dialect: SimDialect, fault: SimFault): void {
    switch (fault) {
      case 'error-midstream':
        end(ex, 'faulted', Buffer.from(dialect.errorFrame(), 'utf8'));
        return;
      case 'truncate':
        end(ex, 'faulted');
        return;
      case 'reset':
        reset(ex);
        return;
      default:
        // 'stall' (and 'hang', handled earlier): write nothing more; the client's leaving ends it.
        return;
    }
  }

  const api: Simulator = {
    server,
    get url() {
      return url;
    },
    get stats() {
      return { ...counters };
    },
    get requests() {
      return records.slice();
    },
    listen(port = 0, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        const onError = (e: Error): void => reject(e);
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const addr = server.address() as AddressInfo;
          const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
          url = `http://${h === '0.0.0.0' ? '127.0.0.1' : h === '[::]' ? '[::1]' : h}:${addr.port}`;
          resolve({ port: addr.port, url });
        });
      });
    },
    close() {
      closing = true;
      for (const ex of [...live]) {
        ex.endAs = 'closed';
        ex.destroyedByUs = true;
        ex.res.destroy();
        finalize(ex);
      }
      return new Promise((resolve) => {
        if (!server.listening) {
          for (const s of sockets) s.destroy();
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      });
    },
    configure(patch) {
      const next = merge(settings, patch);
      validateSettings(next);
      settings = next;
    },
    on(event, listener) {
      emitter.on(event, listener);
      return api;
    },
    once(event, listener) {
      emitter.once(event, listener);
      return api;
    },
    off(event, listener) {
      emitter.off(event, listener);
      return api;
    },
  };
  return api;
}
