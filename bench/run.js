'use strict';
// tidegate benchmark harness: `npm run bench` (full, ~17–20 min) or `npm run bench:quick` (< 2 min).
// Starts a fake upstream, each system under test (naive proxy, pipeline() proxy, nginx, tidegate)
// and a load generator, all on 127.0.0.1, runs S1–S4, the stability map and micro-benchmarks,
// prints tables, writes bench/results/*.json, docs/img/bench-*.svg and docs/benchmarks.md.
//
// Flags: --quick  --only S1,S2,S3,S4,MAP,MICRO  --targets naive,pipeline,nginx,tidegate-pass,tidegate-openai
//        --no-docs (do not rewrite docs/benchmarks.md and the SVGs; the default in --quick mode)
//        --docs (rewrite them from a quick run too)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const procs = require('./lib/procs');
const { Sampler } = require('./lib/sampler');
const { KernelTcpWatch } = require('./lib/kernel-tcp');
const { targets, DEFAULT_POLICY, tidegateCommand, GATEWAY_CLI, cliFlags } = require('./targets');
const report = require('./report');

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const flag = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : null);
const ONLY = (flag('--only') || 'S1,S2,S3,S4,MAP,MICRO').toUpperCase().split(',');
const TARGET_FILTER = flag('--targets') ? flag('--targets').split(',') : null;
// docs/benchmarks.md holds the full figures: a quick run leaves it alone unless --docs is given.
const WRITE_DOCS = argv.includes('--docs') || (!QUICK && !argv.includes('--no-docs'));

const fd = procs.fdLimits();
const S4_MAX = Math.max(100, Math.floor((fd.hard - 300) / 2)); // the gateway holds 2 fds per stream

/** All counts and durations, bounded; quick mode keeps the whole run under 2 minutes. */
const P = QUICK
  ? {
      s1: { clients: 20, rate: 20000, eventBytes: 100, durationMs: 2000, slowBps: 2048, stallTimeoutMs: 700, stallSlackMs: 1000, drainMs: 500, maxDrainMs: 1500, drainIdleMs: 1000, lateMs: 1000, snapshotsAt: [0.75, 1] },
      s2: { clients: 10, bytesPerStream: 4 << 20, eventBytes: 150, maxMs: 8000 },
      s3: { clients: 20, rate: 100, eventBytes: 150, durationMs: 1000, warmupMs: 500 },
      s4: { streams: Math.min(500, S4_MAX), holdMs: 1500, eventBytes: 150 },
      map: { streams: 10, cellMs: 800, producers: [2000, 50000], consumers: ['stalled', 65536, 'fast'], stallTimeoutMs: 500 },
      micro: { elements: 200000, runs: 3 },
    }
  : {
      s1: { clients: 200, rate: 10000, eventBytes: 100, durationMs: 20000, slowBps: 2048, stallTimeoutMs: 90000, stallSlackMs: 10000, drainMs: 3000, maxDrainMs: 120000, drainIdleMs: 30000, lateMs: 15000, snapshotsAt: [0.2, 0.4, 0.6, 1] },
      s2: { clients: 50, bytesPerStream: 20 << 20, eventBytes: 150, maxMs: 60000 },
      s3: { clients: 100, rate: 100, eventBytes: 150, durationMs: 10000, warmupMs: 3000 },
      s4: { streams: Math.min(9000, S4_MAX), holdMs: 15000, eventBytes: 150 },
      map: { streams: 20, cellMs: 4000, producers: [500, 2000, 10000, 50000], consumers: ['stalled', 4096, 65536, 1048576, 'fast'], stallTimeoutMs: 1500 },
      micro: { elements: 1000000, runs: 5 },
    };

// BENCH_PARAMS='{"s2":{"bytesPerStream":33554432}}' overrides fields (profiling runs).
if (process.env.BENCH_PARAMS) {
  for (const [k, v] of Object.entries(JSON.parse(process.env.BENCH_PARAMS))) P[k] = { ...P[k], ...v };
}

const results = {
  mode: QUICK ? 'quick' : 'full',
  startedAt: new Date().toISOString(),
  command: QUICK ? 'npm run bench:quick' : 'npm run bench',
  machine: machineInfo(),
  params: P,
  gatewayCommand: null,
  skipped: [],
  scenarios: {},
};

function machineInfo() {
  let model = 'unknown';
  try {
    model = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))[1].trim();
  } catch {
    /* not Linux */
  }
  return { nproc: os.cpus().length, loadavgStart: os.loadavg().map((x) => +x.toFixed(2)), model, node: process.version, memGb: +(os.totalmem() / 2 ** 30).toFixed(1), fdSoft: fd.soft, fdHard: fd.hard, kernel: os.release() };
}

// ---------------------------------------------------------------- helpers

let upstream = null; // {rec, port, url}
let load = null; // forked load generator

async function http(method, url, body) {
  const res = await fetch(url, { method, body: body ? JSON.stringify(body) : undefined, headers: { 'content-type': 'application/json' } });
  return res.json();
}
const upCtl = (p, body) => http(body === undefined && p === '/_stats' ? 'GET' : 'POST', upstream.url + p, body);

function loadCall(msg, type, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      load.child.off('message', on);
      reject(new Error(`load generator: no ${type} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (m) => {
      if (m.type === type || m.type === 'error') {
        clearTimeout(t);
        load.child.off('message', on);
        if (m.type === 'error') reject(new Error(m.message));
        else resolve(m);
      }
    };
    load.child.on('message', on);
    load.child.send(msg);
  });
}

async function startUpstream() {
  const port = await procs.freePort();
  const rec = procs.start('upstream', process.execPath, [path.join(__dirname, 'upstream.js'), '--port', String(port)], { cwd: ROOT });
  await procs.waitForPort(port, 10000, rec);
  upstream = { rec, port, url: `http://127.0.0.1:${port}` };
}

async function ensureLoad() {
  if (load && load.child.exitCode === null) return;
  load = procs.forkModule('load', path.join(__dirname, 'load.js'));
}

/** Starts a target with a fresh port and an idle RSS reading. */
async function startTarget(t, policy) {
  const port = await procs.freePort();
  const h = await t.start({ port, upstreamUrl: upstream.url, policy });
  if (h.unsupported && h.unsupported.length) results.gatewayFlagsMissing = h.unsupported;
  await procs.sleep(QUICK ? 200 : 400);
  h.sampler = new Sampler(h.rec.pid, { intervalMs: 100, withChildren: h.sampleChildren });
  h.idle = h.sampler.read();
  return h;
}

async function stopTarget(h) {
  if (!h) return;
  h.sampler.stopSampling();
  await procs.stop(h.rec);
  if (h.cleanup) h.cleanup();
}

/** The JSON lines of a process's stdout (others skipped), each with its winston `meta` merged in. */
function* logRecords(rec) {
  for (const line of rec.stdoutLines) {
    let o;
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    yield { ...o, ...(o.meta || {}) };
  }
}

/** Summarizes the gateway's one-JSON-line-per-stream log: counts of outcome/code values. */
function gatewayLogSummary(rec) {
  const counts = {};
  let lines = 0;
  for (const flat of logRecords(rec)) {
    lines++;
    for (const k of ['outcome', 'code', 'reason', 'status']) {
      if (flat[k] !== undefined && typeof flat[k] !== 'object') {
        const key = `${k}=${flat[k]}`;
        counts[key] = (counts[key] || 0) + 1;
      }
    }
  }
  return { lines, counts };
}

/*
 * HELD BYTES PER STREAM: what a proxy keeps in its own (userland) memory for one stream.
 *
 * Measured bench-side, independent of the gateway's own accounting, after freezing the upstream
 * (it stops producing) and the clients (they stop reading), so the numbers are still:
 *
 *   in   = payload the proxy read from its upstream socket
 *        = written − (pending + kernel queues of the upstream link) × written/wire
 *   out  = payload the proxy handed to its client socket
 *        = client payload read + (kernel queues of the client link) × payload/body-wire seen by the client
 *   held = in − out
 *
 * `written`/`wire` come from the fake upstream (payload bytes / the same plus chunk framing that it
 * handed to res.write); "kernel queues" are tx_queue + rx_queue of both ends of each link from
 * /proc/net/tcp. Kernel queues hold WIRE bytes (chunk framing included): with one chunk per
 * ~175 B event the framing is ~4% of a 4 MiB autotuned send queue, ~140 KiB, more than the 64 KiB
 * budget, hence the conversion with payload/wire ratios instead of subtracting wire from payload.
 *
 * A stream is counted only while both of its client-link sockets are in /proc/net/tcp (ESTABLISHED,
 * or FIN_WAIT/CLOSE_WAIT with the proxy's FIN queued behind the data) and the upstream did not see
 * the proxy abort it. The previous version took "open"
 * from the frozen client's own view; but a paused socket (readStop) does not notice a reset, and
 * a reset socket disappears from /proc/net/tcp with its queues discarded. So a stream tidegate had
 * just cut for stalling (it resets the socket) looked open with zero kernel bytes, and everything
 * the upstream wrote counted as "held": the 6.6 MB per stream at 10,000 ev/s in the stability map
 * were the queues the reset threw away (one stalled stream just before its cut: 3.9 MiB gateway
 * send queue + 123 KiB client receive queue + 2.4 MiB upstream send queue + 124 KiB gateway
 * receive queue). strace of the gateway over 20 such streams: socket reads − socket writes = −13 KB
 * in total, i.e. nothing accumulated in userland. Such streams are now "cut (reset)": the client
 * socket is gone from the table, or the final drain reads ECONNRESET. A client socket in
 * CLOSE_WAIT means the proxy closed it with a FIN ("closed").
 *
 * (/proc/<pid>/io rchar − wchar is no cross-check for tidegate: its stall detector reads
 * /proc/net/tcp itself, about 1 MB per read with a few thousand TIME_WAIT sockets on the host.)
 */
/**
 * State of a stream's client link in the frozen snapshot: 'open' (both sockets ESTABLISHED),
 * 'ending' (the proxy has shut down its sending side: FIN queued behind the data, so its socket is
 * in FIN_WAIT and the client's in ESTABLISHED or CLOSE_WAIT; the kernel queues still count),
 * 'reset' (the client's socket is gone from the table: a reset discarded its queues), 'closed'.
 */
function linkState(snap, c, gwPort) {
  if (!gwPort) return 'open';
  const cl = snap.tcp[`${c.localPort}>${gwPort}`];
  const gw = snap.tcp[`${gwPort}>${c.localPort}`];
  if (!cl) return c.ended ? 'closed' : 'reset';
  if (cl.st === '01' && gw && gw.st === '01') return 'open';
  if (cl.st === '01' || cl.st === '08') return 'ending';
  return 'closed';
}

function heldPerStream(stats, snap, gwPort) {
  const byTag = new Map(stats.streams.map((s) => [s.tag, s]));
  const q = (a, b) => {
    const e = snap.tcp[`${a}>${b}`];
    return e ? e.tx + e.rx : 0;
  };
  const out = [];
  for (const c of snap.clients) {
    const s = byTag.get(c.tag);
    if (!s) continue;
    const kUp = q(s.remotePort, upstream.port) + q(upstream.port, s.remotePort);
    const kDown = gwPort ? q(c.localPort, gwPort) + q(gwPort, c.localPort) : 0;
    const link = linkState(snap, c, gwPort);
    const rUp = s.wire > 0 ? s.written / s.wire : 1;
    const body = c.rawBytes - (c.headBytes || 0);
    const rDown = body > 0 && c.payloadBytes > 0 ? c.payloadBytes / body : 1;
    const inB = s.written - (s.pending + kUp) * rUp;
    const outB = c.payloadBytes + kDown * rDown;
    // The proxy may have closed its upstream connection a moment before the upstream noticed
    // (a stall cut right before the snapshot): its kernel queues are gone from the table (both
    // sides, or the proxy's side whose receive queue held them), so "written − kernel queues"
    // would count them as held. Such a stream is not open any more.
    const upstreamLink = snap.tcp[`${s.remotePort}>${upstream.port}`] !== undefined && snap.tcp[`${upstream.port}>${s.remotePort}`] !== undefined;
    const open = (link === 'open' || link === 'ending') && s.state !== 'aborted' && upstreamLink && !c.failed;
    out.push({ tag: c.tag, mode: c.mode, open, link, upstreamAborted: s.state === 'aborted', produced: s.written, inB, held: open ? Math.max(0, inB - outB) : null, heldRaw: Math.round(inB - outB), kernelUp: kUp, kernelDown: kDown, received: c.rawBytes });
  }
  return out;
}

/**
 * How a stream ended, from the client's view after the final drain plus the link state in the
 * frozen snapshot: 'error' (an error event arrived), 'done' ([DONE]), 'reset' (cut with a TCP
 * reset: no error event can arrive), 'closed' (ended without [DONE] or an error event), 'open'
 * ('unread' when the proxy had aborted the upstream: ended, but the client has not read that far).
 */
function outcomeOf(c, link) {
  if (c.sawError) return 'error';
  if (c.sawDone) return 'done';
  if (link === 'reset' || (c.status === 200 && /ECONNRESET|EPIPE/.test(String(c.failed || '')))) return 'reset';
  if (c.ended || c.failed || link === 'closed') return 'closed';
  return 'open';
}

function outcomes(clients, held) {
  const byTag = new Map(held.map((x) => [x.tag, x]));
  return clients.map((c) => {
    const h = byTag.get(c.tag);
    let outcome = outcomeOf(c, h && h.link);
    // The proxy closed the upstream but the client has not read its way to the end yet.
    if (outcome === 'open' && h && h.upstreamAborted) outcome = 'unread';
    return { ...c, outcome };
  });
}

const countBy = (a) => a.reduce((m, k) => ((m[k] = (m[k] || 0) + 1), m), {});
const sum = (a) => a.reduce((x, y) => x + y, 0);
const max = (a) => a.reduce((x, y) => Math.max(x, y), 0);
const mean = (a) => (a.length ? sum(a) / a.length : 0);
const fmtB = (b) => (b >= 1 << 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`);

function table(title, cols, rows) {
  const w = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells) => cells.map((c, i) => String(c ?? '').padEnd(w[i])).join('  ');
  console.log(`\n${title}\n${line(cols)}\n${w.map((n) => '-'.repeat(n)).join('  ')}`);
  for (const r of rows) console.log(line(r));
}

function activeTargets(filterFn) {
  const out = [];
  for (const t of targets()) {
    if (TARGET_FILTER && !TARGET_FILTER.includes(t.name)) continue;
    if (filterFn && !filterFn(t)) continue;
    const a = t.available();
    if (!a.ok) {
      if (!results.skipped.some((s) => s.target === t.name)) results.skipped.push({ target: t.name, why: a.why });
      continue;
    }
    out.push(t);
  }
  return out;
}

/** Runs fn(target) for each target, recording a failure instead of aborting the whole run. */
async function eachTarget(scenario, list, fn) {
  const rows = {};
  for (const t of list) {
    const t0 = Date.now();
    try {
      rows[t.name] = await fn(t);
    } catch (e) {
      rows[t.name] = { error: String(e && e.message ? e.message : e).slice(0, 500) };
      console.error(`  ${scenario} ${t.name}: ${rows[t.name].error}`);
    }
    process.stderr.write(`  ${scenario} ${t.name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  return rows;
}

// ---------------------------------------------------------------- scenarios

/**
 * S1 runs each tidegate route under both overflow policies: `pause` (the upstream is paused; a
 * stalled socket is cut after stallTimeoutMs) and `terminate` (the 64 KiB budget overflows and
 * the stream ends with an error event at once).
 */
function s1Targets() {
  const out = [];
  for (const t of activeTargets()) {
    if (!t.tidegate) {
      out.push(t);
      continue;
    }
    out.push({ ...t, name: `${t.name}`, policy: { overflow: 'pause' } });
    if (!cliFlags() || cliFlags().has('--overflow')) out.push({ ...t, name: `${t.name}+terminate`, policy: { overflow: 'terminate' } });
  }
  return out;
}

/** Per-stream log lines of the gateway: outcome counts and the longest duration per outcome. */
function streamLogStats(rec) {
  const byOutcome = {};
  for (const f of logRecords(rec)) {
    if (typeof f.outcome !== 'string') continue;
    const b = (byOutcome[f.outcome] = byOutcome[f.outcome] || { n: 0, maxDurationMs: 0, codes: {} });
    b.n++;
    if (typeof f.durationMs === 'number') b.maxDurationMs = Math.max(b.maxDurationMs, f.durationMs);
    if (typeof f.peakBufferedBytes === 'number') b.maxPeakBufferedBytes = Math.max(b.maxPeakBufferedBytes || 0, f.peakBufferedBytes);
    if (f.errorCode) b.codes[f.errorCode] = (b.codes[f.errorCode] || 0) + 1;
  }
  return byOutcome;
}

/**
 * How long S1 keeps its clients in their modes, ms. The upstream produces for `durationMs`; under
 * `pause` tidegate holds the rest and its stall cut decides, so the clients stay slow or stalled
 * until `stallTimeoutMs` has passed (plus time to fill the socket queues and see the cut). The
 * stall timeout must exceed the longest time a 2 KB/s reader leaves its TCP window closed: on
 * loopback (MSS 64 KiB) the window reopens about once a minute (docs/benchmarks.md), on the
 * Internet (MSS 1448 B) every few seconds.
 */
function s1HoldMs(t, policy) {
  const p = P.s1;
  const pausing = t.tidegate && policy.overflow !== 'terminate';
  return pausing ? Math.max(p.durationMs, policy.stallTimeoutMs + p.stallSlackMs) : p.durationMs;
}

async function runS1() {
  const p = P.s1;
  const list = s1Targets();
  const rows = await eachTarget('S1', list, async (t) => {
    const policy = { stallTimeoutMs: p.stallTimeoutMs, ...(t.policy || {}) };
    await upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: false, tickMs: 10 });
    const h = await startTarget(t, policy);
    // The kernel's TCP memory over the target's run (its peak against tcp_mem, pressure events).
    const kernel = new KernelTcpWatch();
    const kernelTimer = setInterval(() => kernel.sample(), 500);
    try {
      h.sampler.startSampling();
      await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['stalled', 'slow'], slowBps: p.slowBps, tagPrefix: 's1-' } }, 'started');
      // Frozen snapshots at fractions of the run (the last one at its end): a stream tidegate
      // cuts for stalling is gone by the end, so "held" is also taken while streams are open.
      const t0 = Date.now();
      const snaps = [];
      let held = [];
      let stats = null;
      const holdMs = s1HoldMs(t, policy);
      for (const frac of p.snapshotsAt) {
        const last = frac >= 1;
        await procs.sleep(Math.max(0, (last ? holdMs + 300 : frac * p.durationMs) - (Date.now() - t0)));
        await upCtl('/_freeze', {});
        await loadCall({ cmd: 'freeze' }, 'frozen');
        await procs.sleep(last ? 400 : 250);
        stats = await upCtl('/_stats');
        const snap = await loadCall({ cmd: 'snapshot' }, 'snapshot');
        held = heldPerStream(stats, snap, h.port);
        const live = held.filter((x) => x.open);
        // The down-link kernel queue is wire bytes; how much of it is chunk framing shows only when
        // the client reads it (after the drain at the latest): each open client marks that point.
        const ahead = {};
        for (const x of live) ahead[x.tag] = x.kernelDown;
        const { marks } = await loadCall({ cmd: 'mark', ahead }, 'marked');
        snaps.push({ atMs: Date.now() - t0, open: live.length, heldMaxB: live.length ? max(live.map((x) => x.held)) : null, heldMeanB: live.length ? mean(live.map((x) => x.held)) : null, links: countBy(held.map((x) => x.link)), live: live.map((x) => ({ tag: x.tag, inB: x.inB, mark: marks[x.tag] })) });
        if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ atMs: Date.now() - t0, streams: stats.streams.slice(0, 2), clients: snap.clients.slice(0, 2), held: held.slice(0, 4), nheld: held.length }));
        if (!last) {
          await upCtl('/_unfreeze', {});
          await loadCall({ cmd: 'unfreeze' }, 'unfrozen');
        }
      }
      const samples = h.sampler.stopSampling();
      const debugUrl = t.tidegate ? `http://127.0.0.1:${h.port}/debug/streams` : undefined;
      const res = await loadCall({ cmd: 'stop', drainMs: p.drainMs, maxDrainMs: p.maxDrainMs, idleMs: p.drainIdleMs, lateMs: p.lateMs, debugUrl, upstreamPort: upstream.port }, 'result', p.maxDrainMs + p.lateMs + 30000);
      clearInterval(kernelTimer);
      // Exact held bytes where the client read past its mark: read from upstream − payload up to
      // the mark (what the client read plus the payload in the down-link kernel queues).
      const clientByTag = new Map(res.clients.map((c) => [c.tag, c]));
      for (const sn of snaps) {
        const exact = [];
        for (const x of sn.live) {
          const payload = x.mark === undefined ? null : clientByTag.get(x.tag)?.marks?.[x.mark];
          if (typeof payload === 'number') exact.push(Math.max(0, x.inB - payload));
        }
        sn.exactStreams = exact.length;
        sn.heldExactMaxB = exact.length ? max(exact) : null;
        sn.heldExactMeanB = exact.length ? mean(exact) : null;
        delete sn.live;
      }
      const best = snaps.filter((x) => x.open > 0).sort((a, b) => (b.heldExactMaxB ?? b.heldMaxB) - (a.heldExactMaxB ?? a.heldMaxB))[0] || null;
      const all = outcomes(res.clients, held);
      const stalled = all.filter((c) => c.mode === 'stalled');
      const slow = all.filter((c) => c.mode === 'slow');
      const n = (list, o) => list.filter((c) => c.outcome === o).length;
      const peak = max(samples.map((s) => s.rssMb));
      return {
        eventBytes: stats.eventBytes,
        idleRssMb: h.idle.rssMb,
        peakRssMb: peak,
        rssDeltaMb: peak - h.idle.rssMb,
        // Largest per-stream userland backlog over the streams open at any snapshot.
        // Exact where every open stream's mark was read (else the framing-ratio estimate).
        heldPerStreamMaxB: best ? (best.exactStreams === best.open ? best.heldExactMaxB : best.heldMaxB) : null,
        heldPerStreamMeanB: best ? (best.exactStreams === best.open ? best.heldExactMeanB : best.heldMeanB) : null,
        heldExact: best ? best.exactStreams === best.open : false,
        heldRatioMaxB: best ? best.heldMaxB : null,
        heldSnapshots: snaps,
        producedPerStreamMeanB: mean(held.map((x) => x.produced)),
        kernelPerStreamMeanB: mean(held.map((x) => x.kernelUp + x.kernelDown)),
        producedPerStreamMaxB: max(held.map((x) => x.produced)),
        nominalPerStreamB: (p.rate * p.durationMs * stats.eventBytes) / 1000,
        stalledCutWithError: n(stalled, 'error'),
        stalledReset: n(stalled, 'reset'),
        stalledClosed: n(stalled, 'closed'),
        stalledUnread: n(stalled, 'unread'),
        stalledDone: n(stalled, 'done'),
        stalledOpen: n(stalled, 'open'),
        stalledEnded: stalled.filter((c) => c.ended).length,
        stalledTotal: stalled.length,
        slowErrored: n(slow, 'error'),
        slowReset: n(slow, 'reset'),
        slowClosed: n(slow, 'closed'),
        slowUnread: n(slow, 'unread'),
        slowCompleted: n(slow, 'done'),
        slowTotal: slow.length,
        slowMeanReceivedB: mean(slow.map((c) => c.payloadBytes)),
        drainedMs: res.drainedMs,
        // The load process's longest gap between two drain samples: a starved bench, not a stalled gateway, when large.
        drainMaxGapMs: res.drainMaxGapMs,
        // Streams still open after the drain: how far they got and how long ago their last event came.
        openAfterDrain: all
          .filter((c) => c.outcome === 'open')
          .slice(0, 10)
          .map((c) => ({ mode: c.mode, rawBytes: c.rawBytes, events: c.events, lastEventMsBeforeDrain: c.lastEventAt ? res.drainStartedAt - c.lastEventAt : null })),
        // Those streams watched for up to lateMs after the drain: how many ended or moved (a pause) and how many did not (a hang).
        openAfterDrainLate: res.late ?? null,
        // The kernel's TCP memory from the target's start to the end of the drain.
        kernelTcp: kernel.result(),
        failed: res.clients.filter((c) => c.failed && !c.status).length,
        stalledErrorCodes: countBy(stalled.filter((c) => c.sawError).map((c) => c.errorCode)),
        policy: t.tidegate ? policy : undefined,
        gatewayLog: gatewayLogSummary(h.rec),
        streamLog: t.tidegate ? streamLogStats(h.rec) : undefined,
        heldStreams: best ? best.open : 0,
        heldAtMs: best ? best.atMs : null,
        linkStates: countBy(held.map((x) => x.link)),
        rssSeries: samples.map((s) => [s.tMs, +s.rssMb.toFixed(1)]),
      };
    } finally {
      clearInterval(kernelTimer);
      await stopTarget(h);
    }
  });
  results.scenarios.S1 = rows;
  for (const [name, r] of Object.entries(rows)) {
    const late = r.openAfterDrainLate;
    if (late) {
      console.log(`  ${name}: ${late.open} stream(s) open after the drain (longest gap between drain samples ${r.drainMaxGapMs} ms); in ${late.watchedMs} ms more, ${late.endedLater} ended and ${late.movedLater} moved`);
      for (const [when, g] of [['at the stop', late.gatewayAtStop], ['after the watch', late.gatewayAfterWatch]]) {
        if (g) console.log(`    gateway ${when}: ${g.holders ? `${g.activeStreams} active, ${JSON.stringify(g.holders)}` : JSON.stringify(g)}`);
      }
      if (late.upstreamLinksAtStop) console.log(`    upstream links at the stop: ${JSON.stringify(late.upstreamLinksAtStop)}`);
    }
    const k = r.kernelTcp;
    if (k && k.peakMb !== null) {
      console.log(`  ${name}: kernel TCP memory peak ${k.peakMb.toFixed(0)} MB (pressure at ${k.pressureMb?.toFixed(0)} MB)${k.underPressure ? ', UNDER PRESSURE' : ''}; ${JSON.stringify(k.counters)}`);
    }
  }
  table(
    `S1: ${p.clients} clients (½ stalled, ½ slow at ${p.slowBps} B/s), upstream ${p.rate} events/s/stream, ${p.durationMs / 1000} s`,
    ['target', 'peak-idle RSS', 'held/stream max (open)', 'produced/stream', 'stalled: error ev / reset / closed / done', 'slow: error ev / reset / closed / done', 'gateway cut ≤ ms'],
    Object.entries(rows).map(([n, r]) =>
      r.error
        ? [n, 'ERROR: ' + r.error.slice(0, 60)]
        : [
            n,
            `${r.rssDeltaMb.toFixed(1)} MB`,
            r.heldStreams ? `${fmtB(r.heldPerStreamMaxB)} (${r.heldStreams} open @ ${(r.heldAtMs / 1000).toFixed(1)} s)` : 'n/a (0 open)',
            `${fmtB(r.producedPerStreamMeanB)} of ${fmtB(r.nominalPerStreamB)}`,
            `${r.stalledCutWithError} / ${r.stalledReset} / ${r.stalledClosed} / ${r.stalledDone} of ${r.stalledTotal}`,
            `${r.slowErrored} / ${r.slowReset} / ${r.slowClosed} / ${r.slowCompleted} of ${r.slowTotal}`,
            cutSummary(r.streamLog),
          ],
    ),
  );
}

/** "overflow 20 ≤ 35 ms": streams the gateway ended itself, per outcome, with the longest duration. */
function cutSummary(log) {
  if (!log) return '-';
  return (
    Object.entries(log)
      .filter(([k]) => k !== 'completed' && k !== 'client_closed')
      .map(([k, v]) => `${k} ${v.n} ≤ ${Math.round(v.maxDurationMs)}`)
      .join(', ') || 'none'
  );
}

async function waitProgress(pred, maxMs, flowWindowMs) {
  const deadline = Date.now() + maxMs;
  let pr;
  do {
    pr = await loadCall({ cmd: 'progress', flowWindowMs }, 'progress');
    if (pred(pr)) return pr;
    await procs.sleep(100);
  } while (Date.now() < deadline);
  return pr;
}

async function runS2() {
  const p = P.s2;
  const list = activeTargets();
  const rows = await eachTarget('S2', list, async (t) => {
    await upCtl('/_config', { rate: 0, eventBytes: p.eventBytes, durationMs: p.maxMs, maxBytes: p.bytesPerStream, ts: false });
    const h = await startTarget(t);
    try {
      const cpu0 = h.sampler.read().cpuS;
      const t0 = Date.now();
      await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], tagPrefix: 's2-' } }, 'started');
      const pr = await waitProgress((x) => x.ended >= x.total, p.maxMs + 2000);
      const wallS = (Date.now() - t0) / 1000;
      const cpu1 = h.sampler.read().cpuS;
      const res = await loadCall({ cmd: 'stop', drainMs: 0 }, 'result');
      const bytes = sum(res.clients.map((c) => c.payloadBytes));
      const notDone = res.clients.filter((c) => !c.sawDone);
      if (notDone.length) console.error(`  S2 ${t.name}: not completed ${JSON.stringify(notDone.slice(0, 3))} gateway: ${JSON.stringify(streamLogStats(h.rec))}`);
      const gb = bytes / 1e9;
      return {
        bytes,
        wallS,
        mbPerS: bytes / 1e6 / wallS,
        cpuS: cpu1 - cpu0,
        cpuSPerGb: gb > 0 ? (cpu1 - cpu0) / gb : null,
        fffd: sum(res.clients.map((c) => c.fffd)),
        completed: res.clients.filter((c) => c.sawDone).length,
        total: res.clients.length,
        allEnded: pr.ended >= pr.total,
      };
    } finally {
      await stopTarget(h);
    }
  });
  results.scenarios.S2 = rows;
  table(
    `S2: ${p.clients} fast clients, unlimited upstream, ${fmtB(p.bytesPerStream)} per stream`,
    ['target', 'MB/s', 'CPU s/GB', 'U+FFFD', 'completed'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.mbPerS.toFixed(0), r.cpuSPerGb?.toFixed(2), r.fffd, `${r.completed}/${r.total}`])),
  );
}

/**
 * S3 runs twice. `S3` (the one the target is checked on): every stream emits on its own 10 ms
 * schedule, phases spread as connections arrive (the upstream ticks every 1 ms), as independent
 * model streams do. `S3burst`: the upstream ticks every 10 ms and emits one event on all 100
 * streams at once, so every proxy (and the load generator) handles 100 events back to back; its
 * p99 measures that batch, and even "direct" needs about 3 ms for it on this machine.
 */
async function runS3() {
  const p = P.s3;
  const direct = { name: 'direct', label: 'direct to upstream', path: '/sse', start: async () => ({ rec: upstream.rec, port: upstream.port, direct: true }) };
  const list = [direct, ...activeTargets()];
  for (const [key, tickMs, how] of [
    ['S3', 1, 'each stream on its own schedule'],
    ['S3burst', 10, 'all streams emit in the same tick'],
  ]) {
    const rows = await eachTarget(key, list, async (t) => {
      const h = t.name === 'direct' ? { port: upstream.port, direct: true } : await startTarget(t);
      try {
        // Warm-up, not measured: the same load for warmupMs, so a JIT-compiled proxy runs optimized
        // code (as latency benchmarks do); the measured run then opens 100 new streams.
        if (p.warmupMs > 0) {
          await upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.warmupMs, maxBytes: 1 << 30, ts: true, tickMs });
          await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], latency: true, tagPrefix: 's3w-' } }, 'started');
          await waitProgress((x) => x.ended >= x.total, p.warmupMs + 5000);
          await loadCall({ cmd: 'stop', drainMs: 0 }, 'result');
        }
        await upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: true, tickMs });
        await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], latency: true, tagPrefix: 's3-' } }, 'started');
        await waitProgress((x) => x.ended >= x.total, p.durationMs + 5000);
        const res = await loadCall({ cmd: 'stop', drainMs: 0, warmupEvents: p.rate }, 'result');
        return { ...res.latency, completed: res.clients.filter((c) => c.sawDone).length, total: res.clients.length, tickMs };
      } finally {
        if (!h.direct) await stopTarget(h);
      }
    });
    results.scenarios[key] = rows;
    table(
      `${key}: ${p.clients} clients × ${p.rate} events/s (${how}), emit→receive latency`,
      ['target', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p99 after 1st s', 'events', 'completed'],
      Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.p50?.toFixed(2), r.p90?.toFixed(2), r.p99?.toFixed(2), r.max?.toFixed(1), r.steady?.p99 != null ? r.steady.p99.toFixed(2) : 'n/a (run ≤ 1 s)', r.n, `${r.completed}/${r.total}`])),
    );
  }
}

async function runS4() {
  const p = P.s4;
  const list = activeTargets();
  const rampBatch = 200;
  const rampDelayMs = 100;
  const rampMs = Math.ceil(p.streams / rampBatch) * rampDelayMs;
  const rows = await eachTarget('S4', list, async (t) => {
    await upCtl('/_config', { rate: 1, eventBytes: p.eventBytes, durationMs: rampMs + p.holdMs + 20000, maxBytes: 1 << 30, ts: false, tickMs: 50 });
    const h = await startTarget(t);
    try {
      h.sampler.startSampling();
      const t0 = Date.now();
      await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.streams, modes: ['fast'], rampBatch, rampDelayMs, tagPrefix: 's4-' } }, 'started', 120000);
      const wait = Math.max(0, rampMs + p.holdMs - (Date.now() - t0));
      await procs.sleep(wait);
      const pr = await loadCall({ cmd: 'progress', flowWindowMs: 2500 }, 'progress');
      const now = h.sampler.read();
      h.sampler.stopSampling();
      await loadCall({ cmd: 'stop', drainMs: 0 }, 'result', 60000);
      const deltaKb = (now.rssMb - h.idle.rssMb) * 1024;
      return {
        streams: p.streams,
        open: pr.open,
        flowing: pr.flowing,
        failed: pr.failed,
        errors: pr.errors,
        rssMb: now.rssMb,
        idleRssMb: h.idle.rssMb,
        kbPerStream: pr.open > 0 ? deltaKb / pr.open : null,
        holdS: (Date.now() - t0) / 1000,
      };
    } finally {
      await stopTarget(h);
      await procs.sleep(QUICK ? 200 : 500);
    }
  });
  results.scenarios.S4 = rows;
  table(
    `S4: ${p.streams} concurrent 1 event/s streams (fd hard limit ${fd.hard}), checked after ${p.holdMs / 1000} s`,
    ['target', 'open', 'flowing', 'failed', 'RSS', 'KB/stream'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.open, r.flowing, r.failed, `${r.rssMb.toFixed(0)} MB`, r.kbPerStream?.toFixed(1)])),
  );
}

/** Stability map: producer rate × consumer rate per policy; each cell classified. */
async function runMap() {
  const p = P.map;
  const all = targets();
  const pass = all.find((t) => t.name === 'tidegate-pass');
  const tg = pass.available().ok ? pass : all.find((t) => t.name === 'tidegate-openai');
  const naive = all.find((t) => t.name === 'naive');
  const flags = cliFlags();
  const policies = [
    { name: 'tidegate pause', target: tg, policy: { overflow: 'pause', stallTimeoutMs: p.stallTimeoutMs } },
    { name: 'tidegate terminate', target: tg, policy: { overflow: 'terminate', stallTimeoutMs: p.stallTimeoutMs } },
    { name: 'naive proxy', target: naive },
  ].filter((x) => {
    if (x.name === 'tidegate terminate' && flags && !flags.has('--overflow')) {
      results.skipped.push({ target: 'map: tidegate terminate', why: 'this gateway build has no --overflow flag yet' });
      return false;
    }
    const a = x.target.available();
    if (!a.ok) results.skipped.push({ target: `map: ${x.name}`, why: a.why });
    return a.ok && (!TARGET_FILTER || TARGET_FILTER.includes(x.target.name));
  });
  const budget = DEFAULT_POLICY.maxBufferedBytes;
  const out = { producers: p.producers, consumers: p.consumers, streams: p.streams, cellMs: p.cellMs, budgetBytes: budget, policies: {} };
  for (const pol of policies) {
    const cells = [];
    let h;
    try {
      h = await startTarget(pol.target, pol.policy);
      for (const rate of p.producers) {
        for (const cons of p.consumers) {
          await upCtl('/_config', { rate, eventBytes: 150, durationMs: p.cellMs, maxBytes: 1 << 30, ts: false, tickMs: 10 });
          const rss0 = h.sampler.read().rssMb;
          let peak = rss0;
          const tm = setInterval(() => (peak = Math.max(peak, h.sampler.read().rssMb)), 100);
          const mode = cons === 'stalled' ? 'stalled' : cons === 'fast' ? 'fast' : 'slow';
          await loadCall({ cmd: 'start', spec: { port: h.port, path: pol.target.path, clients: p.streams, modes: [mode], slowBps: typeof cons === 'number' ? cons : 0, tagPrefix: `m${rate}-${cons}-` } }, 'started');
          await procs.sleep(p.cellMs + (QUICK ? 200 : 300));
          await upCtl('/_freeze', {});
          await loadCall({ cmd: 'freeze' }, 'frozen');
          await procs.sleep(QUICK ? 150 : 250);
          const stats = await upCtl('/_stats');
          const snap = await loadCall({ cmd: 'snapshot' }, 'snapshot');
          clearInterval(tm);
          const held = heldPerStream(stats, snap, h.port);
          if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ cell: [rate, cons], held: held.slice(0, 3), up: stats.streams.slice(0, 3) }));
          const res = await loadCall({ cmd: 'stop', drainMs: QUICK ? 300 : 800, maxDrainMs: QUICK ? 900 : 2400 }, 'result');
          const oc = countBy(outcomes(res.clients, held).map((c) => c.outcome));
          // Cut by the proxy: an error event, a reset (tidegate's stall cut), or a close without either.
          const cut = { error: oc.error || 0, reset: oc.reset || 0, closed: oc.closed || 0, unread: oc.unread || 0 };
          const errored = cut.error + cut.reset + cut.closed + cut.unread;
          // Completed means [DONE] arrived within the cell, before the final drain.
          const done = snap.clients.filter((c) => c.sawDone && !c.sawError).length;
          // Userland backlog over the streams still open at the snapshot (see heldPerStream).
          const live = held.filter((x) => x.open);
          const heldMax = live.length ? max(live.map((x) => x.held)) : null;
          const producedMean = mean(held.map((x) => x.produced));
          const nominal = (rate * p.cellMs * stats.eventBytes) / 1000;
          let state;
          if (heldMax > 4 * budget || peak - rss0 > 100) state = 'grew';
          else if (errored > 0) state = 'terminated';
          else if (done === res.clients.length) state = 'completed';
          else state = 'slowed';
          cells.push({ rate, consumer: cons, state, errored, cut, done, n: res.clients.length, open: live.length, heldMaxB: heldMax, rssGrowthMb: peak - rss0, producedRatio: nominal ? producedMean / nominal : null });
          await upCtl('/_config', { rate: 1, durationMs: 1 }); // drop leftover upstream streams
          await procs.sleep(QUICK ? 80 : 150);
        }
      }
    } catch (e) {
      cells.push({ error: String(e.message || e).slice(0, 300) });
      console.error(`  MAP ${pol.name}: ${e.message}`);
    } finally {
      await stopTarget(h);
    }
    out.policies[pol.name] = cells;
    process.stderr.write(`  MAP ${pol.name} done\n`);
  }
  results.scenarios.MAP = out;
  for (const [name, cells] of Object.entries(out.policies)) {
    const rows = p.producers.map((r) => [
      `${r} ev/s`,
      ...p.consumers.map((c) => {
        const cell = cells.find((x) => x.rate === r && x.consumer === c);
        return cell ? `${cell.state}${cell.state === 'terminated' ? ` ${cutText(cell)}` : cell.state === 'grew' ? ` ${fmtB(cell.heldMaxB || 0)}` : ''}` : '-';
      }),
    ]);
    table(`Stability map: ${name} (${p.streams} streams/cell, ${p.cellMs} ms)`, ['producer \\ consumer', ...p.consumers.map(consumerLabel)], rows);
  }
}

/** "20/20 (reset 20)": streams the proxy cut, and how (error event, reset, close without either). */
function cutText(cell) {
  const c = cell.cut || {};
  const how = [['error ev', c.error], ['reset', c.reset], ['closed', c.closed], ['end unread', c.unread]].filter(([, v]) => v).map(([k, v]) => `${k} ${v}`);
  return `${cell.errored}/${cell.n}${how.length ? ` (${how.join(', ')})` : ''}`;
}

function consumerLabel(c) {
  return c === 'stalled' || c === 'fast' ? c : c >= 1 << 20 ? `${c / 2 ** 20} MiB/s` : `${c / 1024} KiB/s`;
}

async function runMicro() {
  const out = {};
  const m = procs.start('micro', process.execPath, [path.join(__dirname, 'micro.js'), '--elements', String(P.micro.elements), '--runs', String(P.micro.runs)], { cwd: ROOT });
  await waitExit(m, 60000);
  out.flow = lastJson(m) || { skipped: m.stderrTail.slice(-300) || 'no output' };
  // The SSE parser benchmark belongs to another owner; call it when present.
  const candidates = ['bench/dist/sse-parser.js', 'bench/sse-parser.js', 'bench/sse-parser.cjs'].map((f) => path.join(ROOT, f));
  const parserFile = candidates.find((f) => fs.existsSync(f));
  if (parserFile) {
    const pr = procs.start('sse-parser', process.execPath, [parserFile, ...(QUICK ? ['--quick'] : [])], { cwd: ROOT });
    await waitExit(pr, 120000);
    out.parser = { file: path.relative(ROOT, parserFile), json: lastJson(pr), stdout: pr.stdoutLines.slice(-40).join('\n'), exit: pr.exited };
  } else {
    out.parser = { skipped: 'bench/sse-parser.* not present' };
  }
  results.scenarios.MICRO = out;
  const f = out.flow;
  if (f && f.flowOpsPerS) {
    table('Flow micro-benchmark', ['chain', 'elements/s'], [
      ['fromIterable → limitRate(256) → onBackpressureBuffer → request(64)', Math.round(f.flowOpsPerS).toLocaleString('en')],
      ['RxJS from(array).pipe(map)', Math.round(f.rxOpsPerS).toLocaleString('en')],
      ['Flow time / RxJS time', f.ratio.toFixed(2) + '×'],
    ]);
  } else console.log(`\nFlow micro-benchmark skipped: ${JSON.stringify(f).slice(0, 200)}`);
  if (out.parser.stdout) console.log(`\nSSE parser benchmark (${out.parser.file}):\n${out.parser.stdout}`);
  else console.log(`\nSSE parser benchmark skipped: ${out.parser.skipped}`);
}

function waitExit(rec, timeoutMs) {
  return new Promise((resolve) => {
    if (rec.exited) return resolve();
    const t = setTimeout(async () => {
      await procs.stop(rec);
      resolve();
    }, timeoutMs);
    rec.child.once('exit', () => {
      clearTimeout(t);
      setTimeout(resolve, 50); // let stdout flush into stdoutLines
    });
  });
}

function lastJson(rec) {
  for (let i = rec.stdoutLines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(rec.stdoutLines[i]);
    } catch {
      /* not JSON */
    }
  }
  return null;
}

// ---------------------------------------------------------------- main

async function main() {
  procs.installHooks();
  const t0 = Date.now();
  console.log(`tidegate bench (${results.mode}) on ${results.machine.nproc}× ${results.machine.model}, node ${results.machine.node}, fd limit ${fd.soft}/${fd.hard}`);
  if (!fs.existsSync(GATEWAY_CLI)) console.log(`note: ${path.relative(ROOT, GATEWAY_CLI)} not found: tidegate runs are skipped`);
  results.gatewayCommand = tidegateCommand({ port: 'PORT', upstreamUrl: 'http://127.0.0.1:UPSTREAM', policy: {} }).args.join(' ').replace(ROOT + '/', '');
  await startUpstream();
  await ensureLoad();
  const steps = { S1: runS1, S2: runS2, S3: runS3, S4: runS4, MAP: runMap, MICRO: runMicro };
  for (const [k, fn] of Object.entries(steps)) {
    if (!ONLY.includes(k)) continue;
    const ts = Date.now();
    try {
      await fn();
    } catch (e) {
      console.error(`${k} failed: ${e && e.stack ? e.stack : e}`);
      results.scenarios[k] = { error: String(e && e.message ? e.message : e) };
    }
    process.stderr.write(`${k}: ${((Date.now() - ts) / 1000).toFixed(1)} s\n`);
  }
  results.durationS = (Date.now() - t0) / 1000;
  results.machine.loadavgEnd = os.loadavg().map((x) => +x.toFixed(2));
  for (const s of results.skipped) console.log(`skipped ${s.target}: ${s.why}`);
  // A target that failed to start or run is a note here (and an error row in its table), not a crash.
  for (const [k, rows] of Object.entries(results.scenarios)) {
    if (rows && rows.error) console.log(`note: ${k} failed: ${rows.error.slice(0, 200)}`);
    else if (k === 'MAP') {
      for (const [n, cells] of Object.entries(rows.policies || {})) for (const c of cells) if (c.error) console.log(`note: MAP ${n} failed: ${c.error.slice(0, 200)}`);
    } else for (const [n, r] of Object.entries(rows || {})) if (r && r.error) console.log(`note: ${k} ${n} failed: ${r.error.slice(0, 200)}`);
  }
  if (results.gatewayFlagsMissing) console.log(`note: the gateway build rejects ${results.gatewayFlagsMissing.join(', ')}; ran without them (its defaults)`);
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:.]/g, '-');
  fs.writeFileSync(path.join(dir, `bench-${results.mode}-${stamp}.json`), JSON.stringify(results, null, 1));
  fs.writeFileSync(path.join(dir, `latest-${results.mode}.json`), JSON.stringify(results, null, 1));
  if (WRITE_DOCS) {
    const written = report.write(results, ROOT);
    console.log(`\nwrote ${written.join(', ')}`);
  } else console.log('\ndocs/benchmarks.md not rewritten (quick mode or --no-docs; --docs forces it)');
  console.log(`\nbench finished in ${results.durationS.toFixed(0)} s; results in bench/results/`);
  if (QUICK) console.log('quick mode checks the harness: its figures are smaller and shorter runs, not comparable; targets are judged only in full mode (npm run bench, docs/benchmarks.md)');
}

main()
  .catch((e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exitCode = 1;
  })
  .finally(async () => {
    if (load) load.child.disconnect?.();
    if (load) await procs.stop(load, 500);
    if (upstream) await procs.stop(upstream.rec);
    procs.killAllSync();
  });
