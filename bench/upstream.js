'use strict';
// Fake OpenAI-compatible upstream for the bench. Every path except /_* answers with an SSE stream
// of `chat.completion.chunk` events (CJK + emoji content; on /v1/responses the Responses API's
// `response.output_text.delta` events, ending with `response.completed`), produced at a configured
// rate, and honours backpressure: while res.write() is false it produces nothing until 'drain'.
// It records, per stream, how many bytes it managed to write: `written` (SSE payload bytes handed
// to res.write) and `wire` (the same plus HTTP/1.1 chunk framing, i.e. what the kernel queues hold;
// response headers excluded), so the bench can convert kernel queue bytes back to payload bytes.
//
// Control API (the bench sets one config per scenario/cell; stats reset with each config):
//   POST /_config  {rate, eventBytes, durationMs, maxBytes, ts, tickMs, chunk, firstEventNow, seq}
//                  rate = events/s per stream (0 = unlimited), ts = embed emit timestamps,
//                  chunk = 'batch' (many events per res.write(), the default) or 'event' (one
//                  res.write(), so one HTTP chunk, per event, as LLM servers write tokens),
//                  firstEventNow = write the first event with the headers (set-up time),
//                  seq = number every event's content (`[n=<k>]`, for loss/duplicate checks)
//   GET  /_stats   per-stream records
//   POST /_freeze  stop producing on every stream (for a consistent memory snapshot)
//   POST /_unfreeze
//
// Usage: node bench/upstream.js --port N
const http = require('node:http');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1] || 0);

const TEXT = '流式传输的背压🌊不会丢字节テスト😀한국어 데이터🚀emoji✨漢字と絵文字🎉';

let cfg = { rate: 100, eventBytes: 150, durationMs: 5000, maxBytes: 64 << 20, ts: false, tickMs: 10, chunk: 'batch', firstEventNow: false, seq: false };
let epoch = 0;
let streams = [];
let frozen = false;
let nextId = 1;
const active = new Set();

function nowMs() {
  return performance.timeOrigin + performance.now();
}

/** Content text of roughly `bytes` UTF-8 bytes, never splitting a code point. */
function contentOf(bytes) {
  let s = '';
  let i = 0;
  const chars = Array.from(TEXT);
  while (Buffer.byteLength(s) < bytes) s += chars[i++ % chars.length];
  return s;
}

const CHUNK_HEAD = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"content":';
const CHUNK_TAIL = '},"finish_reason":null}]}';
const FRAME_OVERHEAD = Buffer.byteLength(`data: ${CHUNK_HEAD}""${CHUNK_TAIL}\n\n`);

/**
 * The two wire shapes: OpenAI chat chunks (`data:` only, `[DONE]` at the end) and the Responses
 * API (`event: <type>` + `data:`; no `[DONE]`, the stream ends with `response.completed`). The
 * bench reuses one buffer per event, so a Responses delta's `sequence_number` does not grow.
 */
const SHAPES = {
  chat: {
    event: (content) => `data: ${CHUNK_HEAD}${JSON.stringify(content)}${CHUNK_TAIL}\n\n`,
    head: '',
    final: `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`,
  },
  responses: {
    event: (content) => `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_bench","output_index":0,"content_index":0,"delta":${JSON.stringify(content)}}\n\n`,
    head:
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_bench","object":"response","created_at":1700000000,"status":"in_progress","model":"bench","output":[]}}\n\n' +
      'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_bench","type":"message","status":"in_progress","role":"assistant","content":[]}}\n\n',
    final:
      'event: response.completed\ndata: {"type":"response.completed","sequence_number":3,"response":{"id":"resp_bench","object":"response","created_at":1700000000,"status":"completed","model":"bench","output":[],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}\n\n',
  },
};
const FRAME_OVERHEAD_OF = { chat: FRAME_OVERHEAD, responses: Buffer.byteLength(SHAPES.responses.event('')) };

let cachedContent = '';
const cached = {}; // shape → {event, batch, head, final} Buffers
function rebuild() {
  cachedContent = contentOf(Math.max(4, cfg.eventBytes - FRAME_OVERHEAD));
  for (const [name, sh] of Object.entries(SHAPES)) {
    const event = Buffer.from(sh.event(contentOf(Math.max(4, cfg.eventBytes - FRAME_OVERHEAD_OF[name]))));
    const n = Math.max(1, Math.floor(65536 / event.length));
    cached[name] = { event, batch: Buffer.concat(Array.from({ length: n }, () => event)), head: Buffer.from(sh.head), final: Buffer.from(sh.final) };
  }
}
rebuild();

/** `n` events of stream `st` as one Buffer (timestamped or numbered when the config says so). */
function makeEvents(st, n) {
  const c = cached[st.shape];
  if (!cfg.ts && !cfg.seq) {
    if (n === 1) return c.event;
    if (n * c.event.length === c.batch.length) return c.batch;
    return Buffer.concat(Array.from({ length: n }, () => c.event));
  }
  let s = '';
  for (let i = 0; i < n; i++) {
    const mark = `${cfg.seq ? `[n=${st.events + i + 1}]` : ''}${cfg.ts ? `[ts=${nowMs().toFixed(3)}]` : ''}`;
    s += SHAPES[st.shape].event(mark + cachedContent);
  }
  return Buffer.from(s);
}

/** Chunked transfer coding adds `<hex length>\r\n` before and `\r\n` after every write. */
function wireOf(st, n) {
  return st.res.chunkedEncoding ? n + n.toString(16).length + 4 : n;
}

function write(st, buf, events) {
  st.written += buf.length;
  st.wire += wireOf(st, buf.length);
  st.events += events;
  const ok = st.res.write(buf);
  if (!ok) {
    st.blocked = true;
    st.blockedSince = Date.now();
  }
  return ok;
}

function finish(st, state) {
  if (st.state !== 'open') return;
  st.state = state;
  st.endedAt = Date.now() - st.startedAt;
  active.delete(st);
  if (state === 'done') {
    const fin = cached[st.shape].final;
    st.written += fin.length;
    st.wire += wireOf(st, fin.length) + (st.res.chunkedEncoding ? 5 : 0); // + last chunk "0\r\n\r\n"
    st.res.end(fin);
  }
}

function onDrain(st) {
  if (!st.blocked) return;
  st.blocked = false;
  st.blockedMs += Date.now() - st.blockedSince;
  // Resume the schedule from now: a blocked producer does not catch up (it did not produce).
  st.schedT0 = Date.now();
  st.schedSent = 0;
  if (cfg.rate === 0) pumpUnlimited(st);
}

function pumpUnlimited(st) {
  if (st.state !== 'open' || st.blocked || frozen) return;
  const limit = st.cfg.maxBytes;
  let budget = 256 * 1024; // per turn, so streams share the loop fairly
  const c = cached[st.shape];
  const perEvent = st.cfg.chunk === 'event';
  const batchEvents = c.batch.length / c.event.length;
  while (budget > 0) {
    if (st.written >= limit || Date.now() - st.startedAt >= st.cfg.durationMs) return finish(st, 'done');
    const buf = perEvent ? makeEvents(st, 1) : st.cfg.seq ? makeEvents(st, batchEvents) : c.batch;
    const ok = write(st, buf, perEvent ? 1 : batchEvents);
    budget -= buf.length;
    if (!ok) return;
  }
  setImmediate(() => pumpUnlimited(st));
}

function tick() {
  const now = Date.now();
  for (const st of active) {
    if (st.cfg.rate === 0) continue;
    if (now - st.startedAt >= st.cfg.durationMs || st.written >= st.cfg.maxBytes) {
      finish(st, 'done');
      continue;
    }
    if (st.blocked || frozen) continue;
    const due = Math.floor(((now - st.schedT0) * st.cfg.rate) / 1000) - st.schedSent;
    if (due <= 0) continue;
    const n = Math.min(due, 5000);
    st.schedSent += due;
    if (st.cfg.chunk === 'event') {
      for (let k = 0; k < n; k++) if (!write(st, makeEvents(st, 1), 1)) break;
    } else write(st, makeEvents(st, n), n);
  }
}
let ticker = setInterval(tick, cfg.tickMs);

function readBody(req) {
  return new Promise((resolve) => {
    const parts = [];
    let size = 0;
    req.on('data', (d) => {
      if (size < 1 << 20) parts.push(d);
      size += d.length;
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

function json(res, code, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer(async (req, res) => {
  const body = await readBody(req);
  if (req.url.startsWith('/_config')) {
    cfg = { rate: 100, eventBytes: 150, durationMs: 5000, maxBytes: 64 << 20, ts: false, tickMs: 10, chunk: 'batch', firstEventNow: false, seq: false, ...JSON.parse(body || '{}') };
    rebuild();
    clearInterval(ticker);
    ticker = setInterval(tick, cfg.tickMs);
    for (const st of active) st.res.destroy();
    active.clear();
    streams = [];
    frozen = false;
    epoch++;
    return json(res, 200, { ok: true, cfg, eventBytes: cached.chat.event.length });
  }
  if (req.url.startsWith('/_stats')) {
    return json(res, 200, {
      epoch,
      eventBytes: cached.chat.event.length,
      streams: streams.map((s) => ({
        id: s.id,
        tag: s.tag,
        remotePort: s.remotePort,
        written: s.written,
        wire: s.wire,
        pending: s.res.writableLength || 0, // wire bytes still in Node's buffer (not yet in the kernel)
        events: s.events,
        state: s.state,
        blockedMs: s.blockedMs + (s.blocked ? Date.now() - s.blockedSince : 0),
        endedAt: s.endedAt,
      })),
    });
  }
  if (req.url.startsWith('/_freeze')) {
    frozen = true;
    return json(res, 200, { ok: true });
  }
  if (req.url.startsWith('/_unfreeze')) {
    frozen = false;
    for (const st of active) {
      // Like a drain: the schedule restarts now, no catch-up burst for the frozen interval.
      st.schedT0 = Date.now();
      st.schedSent = 0;
      if (st.cfg.rate === 0) pumpUnlimited(st);
    }
    return json(res, 200, { ok: true });
  }
  // An SSE stream. The client tags its stream through the OpenAI `user` field.
  let tag = null;
  try {
    tag = JSON.parse(body).user || null;
  } catch {
    /* GET or non-JSON */
  }
  const m = /[?&]tag=([^&]+)/.exec(req.url);
  if (m) tag = decodeURIComponent(m[1]);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  res.flushHeaders();
  res.socket.setNoDelay(true);
  const st = {
    id: nextId++,
    tag,
    remotePort: req.socket.remotePort,
    cfg,
    res,
    written: 0,
    wire: 0,
    events: 0,
    state: 'open',
    blocked: false,
    blockedSince: 0,
    blockedMs: 0,
    startedAt: Date.now(),
    endedAt: null,
    schedT0: Date.now(),
    schedSent: 0,
    shape: req.url.startsWith('/v1/responses') ? 'responses' : 'chat',
  };
  if (streams.length < 50000) streams.push(st);
  active.add(st);
  res.on('drain', () => onDrain(st));
  res.on('close', () => finish(st, 'aborted'));
  const head = cached[st.shape].head;
  if (head.length) write(st, head, 0);
  if (cfg.firstEventNow) write(st, makeEvents(st, 1), 1);
  if (cfg.rate === 0) setImmediate(() => pumpUnlimited(st));
});
server.keepAliveTimeout = 60000;
server.maxConnections = 60000;
server.listen(port, '127.0.0.1', 2048, () => {
  process.stdout.write(JSON.stringify({ ready: true, port: server.address().port }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
