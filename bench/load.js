'use strict';
// Load generator (forked by bench/run.js, driven over IPC). Opens raw TCP connections to a
// target, sends one HTTP/1.1 POST each, and reads the SSE response in one of three modes:
//   fast     read as fast as possible (64 KiB reads)
//   slow     N bytes/s at the TCP level: reads of at most 512 B into a fixed buffer (net `onread`),
//            the socket paused (socket.pause()) once over budget and resumed by a timer,
//            so the sender's socket really fills up
//   stalled  stop reading after the first event
// Raw sockets (not the http module) give exact control over when the kernel is read. Streams open
// in batches (spec.rampBatch every spec.rampDelayMs) or at a steady rate (spec.openRatePerS); each
// records its time to first byte and to first event. The resume scenario's clients are in
// lib/resume-clients.js.
//
// IPC: {cmd:'start', spec} → {type:'started'}; {cmd:'resume', spec} → {type:'detached'}, {type:'resumed'}; {cmd:'freeze'} → {type:'frozen'}; {cmd:'unfreeze'} → {type:'unfrozen'};
//      {cmd:'snapshot'} → {type:'snapshot'};
//      {cmd:'stop', drainMs, maxDrainMs, idleMs, lateMs, debugUrl, upstreamPort} → {type:'result'}
const net = require('node:net');
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const { linksOfPort, tcpQueues } = require('./lib/kernel-tcp');
const { runResume } = require('./lib/resume-clients');

const FFFD = Buffer.from([0xef, 0xbf, 0xbd]);
const ERR_MARK = Buffer.from('event: error');
// OpenAI routes signal an error after the first byte as a data-only frame (no `event:` line):
// `data: {"error":{...,"code":"ERR_TIDEGATE_..."}}`. The upstream never sends `"error":`.
const ERR_MARK_OPENAI = Buffer.from('data: {"error":');
const DONE_MARK = Buffer.from('[DONE]');
// The Responses API has no [DONE]: its stream ends with this event.
const DONE_MARK_RESPONSES = Buffer.from('event: response.completed');
// Each read is searched with the end of the previous one in front, so that a marker split across
// two reads is found: all of a marker but its last byte may sit at the end of the earlier read.
const CARRY_BYTES = Math.max(...[FFFD, ERR_MARK, ERR_MARK_OPENAI, DONE_MARK, DONE_MARK_RESPONSES].map((m) => m.length)) - 1;
const clients = [];
let frozen = false;
let slowTimer = null;

/**
 * tidegate's GET /debug/streams, summarised: its open streams counted by the link that holds
 * them, and the first few snapshots as they are. null when the gateway does not answer.
 */
async function gatewayStreams(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) return { status: res.status };
    const { activeStreams, streams } = await res.json();
    const holders = {};
    for (const s of streams) {
      const b = s.bridge || {};
      const key = [
        b.socketFull ? 'socketFull' : 'socketOpen',
        `outstanding=${b.outstanding ?? '?'}`,
        s.heldReadDemand ? 'readHeld' : 'readFree',
        s.upstream ? (s.upstream.paused ? 'upstreamPaused' : 'upstreamFlowing') : 'noUpstream',
        s.upstream && s.upstream.ended ? 'upstreamEnded' : '',
      ]
        .filter(Boolean)
        .join(' ');
      holders[key] = (holders[key] || 0) + 1;
    }
    return { activeStreams, holders, sample: streams.slice(0, 5) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

function nowMs() {
  return performance.timeOrigin + performance.now();
}

/** Streaming HTTP/1.1 response reader: head, then chunked / content-length / close-delimited body. */
class Client {
  constructor(spec, i) {
    this.i = i;
    this.spec = spec;
    this.mode = spec.modes[i % spec.modes.length];
    this.role = this.mode; // mode may switch to 'fast' for the final drain; role does not
    this.rateBps = spec.slowBps || 2048;
    this.tag = `${spec.tagPrefix || 'c'}${i}`;
    this.rawBytes = 0;
    this.payloadBytes = 0;
    this.events = 0;
    this.fffd = 0;
    this.sawError = false;
    this.errorCode = null;
    this.errorAt = 0;
    this.sawDone = false;
    this.ended = false;
    this.failed = null;
    this.status = 0;
    this.openedAt = 0;
    this.openedHr = 0; // performance.now() at connect(), for set-up times below a millisecond
    this.firstByteMs = null; // first response byte, ms after openedHr
    this.firstEventMs = null; // first complete event, ms after openedHr
    this.firstEventAt = 0;
    this.lastEventAt = 0;
    this.endedAt = 0;
    this.stalledNow = false;
    this.paused = false;
    this.head = Buffer.alloc(0);
    this.inBody = false;
    this.chunked = false;
    this.chunkLeft = 0; // bytes left in current chunk; -1 reading size line; -2 reading CRLF after data
    this.sizeLine = '';
    this.crlfLeft = 0;
    this.tail = Buffer.alloc(0); // carry for marker search across reads
    this.evText = ''; // carry for event parsing when spec.parseEvents
    this.latencies = spec.latency ? [] : null;
    this.localPort = 0;
    this.headBytes = 0; // response head incl. the blank line: rawBytes - headBytes = body bytes on the wire
    this.bodyPos = 0; // body bytes on the wire parsed so far (chunk framing included)
    this.marks = []; // {at: body wire offset, payload: payload bytes up to it, null until read}
  }

  /**
   * Asks for the payload bytes (chunk framing excluded) that the body holds up to wire offset
   * `bodyPos + wireAhead`: a snapshot's kernel queue is wire bytes, and only reading them shows
   * how much of them is framing. Resolved as the client reads that far (or never).
   */
  mark(wireAhead) {
    const m = { at: this.bodyPos + Math.max(0, wireAhead), payload: null };
    if (m.at <= this.bodyPos) m.payload = this.payloadBytes;
    this.marks.push(m);
    return this.marks.length - 1;
  }

  /** Consumes `n` body wire bytes, payload or framing, resolving the marks inside them. */
  advance(n, isPayload) {
    const end = this.bodyPos + n;
    for (const m of this.marks) {
      if (m.payload === null && m.at > this.bodyPos && m.at <= end) m.payload = this.payloadBytes + (isPayload ? m.at - this.bodyPos : 0);
    }
    this.bodyPos = end;
  }

  connect() {
    const bufSize = this.mode === 'fast' ? 65536 : this.mode === 'slow' ? 512 : 4096;
    const buffer = sharedBuffers[bufSize] || (sharedBuffers[bufSize] = Buffer.allocUnsafe(bufSize));
    this.openedAt = Date.now();
    this.openedHr = performance.now();
    const sock = net.connect({
      host: '127.0.0.1',
      port: this.spec.port,
      onread: { buffer, callback: (n, buf) => this.onRead(buf.subarray(0, n)) },
    });
    this.sock = sock;
    sock.setNoDelay(true);
    sock.on('connect', () => {
      this.localPort = sock.localPort;
      // The upstream tags its stream with the body's `user` field (both APIs have one).
      const body = JSON.stringify(
        this.spec.path.startsWith('/v1/responses')
          ? { model: 'bench', stream: true, user: this.tag, input: 'bench' }
          : { model: 'bench', stream: true, user: this.tag, messages: [{ role: 'user', content: 'bench' }] },
      );
      sock.write(
        `POST ${this.spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${this.spec.port}\r\nAccept: text/event-stream\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    sock.on('end', () => this.onEnd());
    sock.on('close', () => this.onEnd());
    sock.on('error', (e) => {
      if (!this.ended && !this.failed) this.failed = e.code || e.message;
    });
  }

  /** Returns false to pause the socket (net `onread` contract). */
  onRead(buf) {
    if (this.rawBytes === 0) this.firstByteMs = performance.now() - this.openedHr;
    this.rawBytes += buf.length;
    if (!this.inBody) {
      this.head = Buffer.concat([this.head, buf]);
      const i = this.head.indexOf('\r\n\r\n');
      if (i < 0) return true;
      const headText = this.head.subarray(0, i).toString('latin1');
      this.headBytes = i + 4;
      this.status = Number(/^HTTP\/1\.[01] (\d+)/.exec(headText)?.[1] || 0);
      this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(headText);
      this.chunkLeft = this.chunked ? -1 : 0;
      this.inBody = true;
      const rest = this.head.subarray(i + 4);
      this.head = null;
      if (rest.length) this.body(rest);
    } else {
      this.body(buf);
    }
    return this.wantMore();
  }

  body(buf) {
    if (!this.chunked) {
      this.advance(buf.length, true);
      return this.payload(buf);
    }
    let p = 0;
    while (p < buf.length) {
      if (this.chunkLeft === -1) {
        const nl = buf.indexOf(10, p);
        if (nl < 0) {
          this.sizeLine += buf.toString('latin1', p);
          this.advance(buf.length - p, false);
          return;
        }
        this.sizeLine += buf.toString('latin1', p, nl);
        this.advance(nl + 1 - p, false);
        p = nl + 1;
        const size = parseInt(this.sizeLine, 16);
        this.sizeLine = '';
        if (size === 0) {
          this.chunkLeft = -3; // trailer; the response is over
          this.onEnd();
          setImmediate(() => this.sock.end());
          return;
        }
        this.chunkLeft = size;
      } else if (this.chunkLeft === -2) {
        const nl = buf.indexOf(10, p);
        if (nl < 0) {
          this.advance(buf.length - p, false);
          return;
        }
        this.advance(nl + 1 - p, false);
        p = nl + 1;
        this.chunkLeft = -1;
      } else if (this.chunkLeft === -3) {
        this.advance(buf.length - p, false);
        return;
      } else {
        const n = Math.min(this.chunkLeft, buf.length - p);
        this.advance(n, true);
        this.payload(buf.subarray(p, p + n));
        p += n;
        this.chunkLeft -= n;
        if (this.chunkLeft === 0) this.chunkLeft = -2;
      }
    }
  }

  payload(buf) {
    if (buf.length === 0) return;
    this.payloadBytes += buf.length;
    const t = Date.now();
    // Marker search over the carry + this read, so markers split across reads are found.
    const scan = this.tail.length ? Buffer.concat([this.tail, buf]) : buf;
    let k = -1;
    while ((k = scan.indexOf(FFFD, k + 1)) >= 0) if (k + 3 > this.tail.length) this.fffd++;
    if (!this.sawError) {
      let at = scan.indexOf(ERR_MARK);
      if (at < 0) at = scan.indexOf(ERR_MARK_OPENAI);
      if (at >= 0) {
        this.sawError = true;
        this.errorAt = t;
        const m = /"code"\s*:\s*"([^"]+)"/.exec(scan.toString('utf8', at, scan.length));
        this.errorCode = m ? m[1] : 'unknown';
      }
    }
    if (!this.sawDone && (scan.indexOf(DONE_MARK) >= 0 || scan.indexOf(DONE_MARK_RESPONSES) >= 0)) this.sawDone = true;
    // Event boundaries: count "\n\n" (our upstream and SSE encoders use LF endings).
    let j = -1;
    let newEvents = 0;
    while ((j = scan.indexOf('\n\n', j + 1)) >= 0) if (j + 2 > this.tail.length) newEvents++;
    if (newEvents) {
      if (!this.firstEventAt) {
        this.firstEventAt = t;
        this.firstEventMs = performance.now() - this.openedHr;
      }
      this.lastEventAt = t;
      this.events += newEvents;
      if (this.mode === 'stalled') this.stalledNow = true;
    }
    if (this.latencies) {
      const text = this.evText + buf.toString('utf8');
      const cut = text.lastIndexOf('\n\n');
      const complete = cut >= 0 ? text.slice(0, cut) : '';
      this.evText = cut >= 0 ? text.slice(cut + 2) : text;
      if (this.evText.length > 1 << 16) this.evText = '';
      if (complete) {
        const now = nowMs();
        const re = /\[ts=([\d.]+)\]/g;
        let m;
        while ((m = re.exec(complete)) && this.latencies.length < 200000) this.latencies.push(now - Number(m[1]));
      }
    }
    this.tail = scan.subarray(Math.max(0, scan.length - CARRY_BYTES));
    if (this.tail.buffer === buf.buffer) this.tail = Buffer.from(this.tail); // onread buffer is reused
  }

  wantMore() {
    if (frozen) return this.pause();
    if (this.mode === 'stalled' && this.stalledNow) return this.pause();
    if (this.mode === 'slow') {
      const allowed = ((Date.now() - this.openedAt) * this.rateBps) / 1000;
      if (this.rawBytes >= allowed) return this.pause();
    }
    return true;
  }

  pause() {
    this.paused = true;
    return false;
  }

  resume() {
    if (!this.paused || this.ended) return;
    this.paused = false;
    this.sock.resume();
  }

  onEnd() {
    if (this.ended) return;
    this.ended = true;
    this.endedAt = Date.now();
  }

  summary() {
    return {
      i: this.i,
      mode: this.role,
      tag: this.tag,
      localPort: this.localPort,
      status: this.status,
      rawBytes: this.rawBytes,
      headBytes: this.headBytes,
      marks: this.marks.map((m) => m.payload),
      payloadBytes: this.payloadBytes,
      events: this.events,
      fffd: this.fffd,
      sawError: this.sawError,
      errorCode: this.errorCode,
      errorAt: this.errorAt,
      sawDone: this.sawDone,
      ended: this.ended,
      failed: this.failed,
      openedAt: this.openedAt,
      firstByteMs: this.firstByteMs,
      firstEventMs: this.firstEventMs,
      firstEventAt: this.firstEventAt,
      lastEventAt: this.lastEventAt,
      endedAt: this.endedAt,
    };
  }
}
const sharedBuffers = {};

function slowTick() {
  if (frozen) return;
  const now = Date.now();
  for (const c of clients) {
    if (!c.paused || c.ended) continue;
    if (c.mode === 'slow' && c.rawBytes < ((now - c.openedAt) * c.rateBps) / 1000) c.resume();
  }
}

async function startAll(spec) {
  for (const c of clients) c.sock.destroy();
  clients.length = 0;
  frozen = false;
  clearInterval(slowTimer);
  if (spec.openRatePerS > 0) {
    // A steady arrival rate: every 5 ms, open the streams due by now (at most spec.clients).
    const t0 = performance.now();
    while (clients.length < spec.clients) {
      const due = Math.min(spec.clients, Math.floor(((performance.now() - t0) * spec.openRatePerS) / 1000) + 1);
      while (clients.length < due) {
        const c = new Client(spec, clients.length);
        clients.push(c);
        c.connect();
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    slowTimer = setInterval(slowTick, 50);
    return;
  }
  const batch = spec.rampBatch || 200;
  for (let i = 0; i < spec.clients; i += batch) {
    for (let k = i; k < Math.min(spec.clients, i + batch); k++) {
      const c = new Client(spec, k);
      clients.push(c);
      c.connect();
    }
    if (i + batch < spec.clients) await new Promise((r) => setTimeout(r, spec.rampDelayMs || 50));
  }
  slowTimer = setInterval(slowTick, 50);
}

function percentile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

process.on('message', async (msg) => {
  try {
    if (msg.cmd === 'start') {
      await startAll(msg.spec);
      process.send({ type: 'started' });
    } else if (msg.cmd === 'resume') {
      // The resume scenario's clients (lib/resume-clients.js); 'detached' when all have dropped.
      const summaries = await runResume(msg.spec, async () => {
        process.send({ type: 'detached' });
        await new Promise((r) => setTimeout(r, msg.spec.sampleMs || 300));
      });
      process.send({ type: 'resumed', clients: summaries });
    } else if (msg.cmd === 'freeze') {
      frozen = true;
      for (const c of clients) if (!c.ended) c.sock.pause();
      process.send({ type: 'frozen' });
    } else if (msg.cmd === 'unfreeze') {
      // Back to each mode's own reading after a mid-run snapshot.
      frozen = false;
      for (const c of clients) {
        if (c.ended || (c.mode === 'stalled' && c.stalledNow)) continue;
        if (c.mode === 'slow') c.paused = true; // slowTick resumes it when under its budget
        else c.sock.resume();
      }
      process.send({ type: 'unfrozen' });
    } else if (msg.cmd === 'progress') {
      const now = Date.now();
      const win = msg.flowWindowMs || 2500;
      const r = { type: 'progress', total: clients.length, ended: 0, failed: 0, errors: 0, flowing: 0, open: 0, payloadBytes: 0, events: 0 };
      for (const c of clients) {
        if (c.ended) r.ended++;
        if (c.failed) r.failed++;
        if (c.sawError) r.errors++;
        if (!c.ended && c.status === 200) r.open++;
        if (!c.ended && !c.sawError && c.lastEventAt > now - win) r.flowing++;
        r.payloadBytes += c.payloadBytes;
        r.events += c.events;
      }
      process.send(r);
    } else if (msg.cmd === 'mark') {
      // {tag: wire bytes ahead} → the index of each client's mark, resolved as it reads on.
      const out = {};
      for (const c of clients) if (msg.ahead[c.tag] !== undefined && c.inBody) out[c.tag] = c.mark(msg.ahead[c.tag]);
      process.send({ type: 'marked', marks: out });
    } else if (msg.cmd === 'snapshot') {
      process.send({ type: 'snapshot', tcp: tcpQueues(), clients: clients.map((c) => c.summary()) });
    } else if (msg.cmd === 'stop') {
      // Drain: read whatever is left for up to drainMs, to see error events and ends.
      frozen = false;
      clearInterval(slowTimer);
      const drainMs = msg.drainMs || 0;
      const drainStart = Date.now();
      // The drain stops early only after idleMs without a byte (default 1 s). Each sample is taken
      // after an I/O poll (setImmediate runs after it): a timer that fires late, because this
      // process was starved, would otherwise sample before the bytes that arrived meanwhile
      // were read, and see "nothing moved".
      const idleMs = msg.idleMs || 1000;
      let maxGapMs = 0;
      if (drainMs > 0) {
        for (const c of clients) {
          c.mode = 'fast';
          c.stalledNow = false;
          c.paused = true;
          c.resume();
        }
        // At least drainMs; then on while bytes still arrive (a multi-MB kernel backlog ahead of an
        // error event), up to maxDrainMs (default 4 × drainMs) in all.
        const maxDrainMs = msg.maxDrainMs || 4 * drainMs;
        const t0 = Date.now();
        let last = -1;
        let movedAt = t0;
        let sampledAt = t0;
        for (;;) {
          const open = clients.filter((c) => !c.ended);
          if (!open.length) break;
          const got = clients.reduce((n, c) => n + c.rawBytes, 0);
          const now = Date.now();
          maxGapMs = Math.max(maxGapMs, now - sampledAt);
          sampledAt = now;
          if (got !== last) movedAt = now;
          last = got;
          if (now - t0 >= maxDrainMs || (now - t0 >= drainMs && now - movedAt >= idleMs)) break;
          await new Promise((r) => setTimeout(r, 100));
          await new Promise((r) => setImmediate(r));
        }
      }
      const summaries = clients.map((c) => c.summary());
      // Streams still open when the drain stopped are watched for up to lateMs more, to tell a
      // pause (they end late) from a hang (they do not move); `summaries` keep the drain's verdict.
      // With debugUrl (tidegate's GET /debug/streams), the gateway's view of its open streams is
      // taken as the drain stops and after the watch: which link holds each one.
      let late = null;
      const stillOpen = clients.filter((c) => !c.ended);
      if ((msg.lateMs || 0) > 0 && stillOpen.length > 0) {
        // The fake upstream's links as the drain stops: unsent bytes and timers on its side
        // (4 = zero-window probe, 1 = retransmit), unread bytes on the proxy's side.
        const upstreamLinksAtStop = msg.upstreamPort ? linksOfPort(msg.upstreamPort) : null;
        const gatewayAtStop = msg.debugUrl ? await gatewayStreams(msg.debugUrl) : null;
        const lateStart = Date.now();
        // Moved = a new event (a heartbeat comment alone is not progress).
        const eventsAt = stillOpen.map((c) => c.events);
        while (Date.now() - lateStart < msg.lateMs && stillOpen.some((c) => !c.ended)) await new Promise((r) => setTimeout(r, 100));
        late = {
          open: stillOpen.length,
          endedLater: stillOpen.filter((c) => c.ended).length,
          movedLater: stillOpen.filter((c, i) => c.events > eventsAt[i]).length,
          watchedMs: Date.now() - lateStart,
          upstreamLinksAtStop,
          gatewayAtStop,
          gatewayAfterWatch: msg.debugUrl ? await gatewayStreams(msg.debugUrl) : null,
        };
      }
      let lat = null;
      if (clients.some((c) => c.latencies)) {
        // `steady`: without each stream's first `warmupEvents` (the connection and relay setup of
        // all streams at once, which is time to first token, not the relay's per-event latency).
        const warm = msg.warmupEvents || 0;
        const all = [];
        const steady = [];
        for (const c of clients) {
          if (!c.latencies) continue;
          c.latencies.forEach((v, i) => {
            all.push(v);
            if (i >= warm) steady.push(v);
          });
        }
        const stats = (a) => {
          a.sort((x, y) => x - y);
          return { n: a.length, p50: percentile(a, 0.5), p90: percentile(a, 0.9), p99: percentile(a, 0.99), max: a[a.length - 1] ?? null };
        };
        lat = { ...stats(all), steady: warm > 0 ? { warmupEvents: warm, ...stats(steady) } : null };
      }
      for (const c of clients) c.sock.destroy();
      process.send({ type: 'result', clients: summaries, latency: lat, beforeDrain: msg.beforeDrain || null, drainStartedAt: drainStart, drainedMs: Date.now() - drainStart, drainMaxGapMs: maxGapMs, late });
    }
  } catch (e) {
    process.send({ type: 'error', message: String(e && e.stack ? e.stack : e) });
  }
});
process.on('disconnect', () => process.exit(0));
