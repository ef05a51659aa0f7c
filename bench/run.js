'use strict';
// tidegate benchmark harness: `npm run bench` (full, ~15 min) or `npm run bench:quick` (< 2 min).
// Starts a fake upstream, each system under test (naive proxy, pipeline() proxy, nginx, tidegate)
// and a load generator, all on 127.0.0.1, runs S1–S4, the stability map and micro-benchmarks,
// prints tables, writes bench/results/*.json, docs/img/bench-*.svg and docs/benchmarks.md.
//
// Flags: --quick  --only S1,S2,S3,S4,MAP,MICRO  --targets naive,pipeline,nginx,tidegate-pass,tidegate-openai
//        --no-docs (do not rewrite docs/benchmarks.md and the SVGs)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const procs = require('./lib/procs');
const { Sampler } = require('./lib/sampler');
const { targets, DEFAULT_POLICY, tidegateCommand, GATEWAY_CLI, cliFlags } = require('./targets');
const report = require('./report');

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const flag = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : null);
const ONLY = (flag('--only') || 'S1,S2,S3,S4,MAP,MICRO').toUpperCase().split(',');
const TARGET_FILTER = flag('--targets') ? flag('--targets').split(',') : null;
const WRITE_DOCS = !argv.includes('--no-docs');

const fd = procs.fdLimits();
const S4_MAX = Math.max(100, Math.floor((fd.hard - 300) / 2)); // the gateway holds 2 fds per stream

/** All counts and durations, bounded; quick mode keeps the whole run under 2 minutes. */
const P = QUICK
  ? {
      s1: { clients: 40, rate: 10000, eventBytes: 100, durationMs: 2000, slowBps: 2048, stallTimeoutMs: 1000, drainMs: 800 },
      s2: { clients: 10, bytesPerStream: 4 << 20, eventBytes: 150, maxMs: 8000 },
      s3: { clients: 20, rate: 100, eventBytes: 150, durationMs: 1500 },
      s4: { streams: Math.min(500, S4_MAX), holdMs: 2000, eventBytes: 150 },
      map: { streams: 10, cellMs: 1000, producers: [2000, 50000], consumers: ['stalled', 65536, 'fast'], stallTimeoutMs: 700 },
      micro: { elements: 200000, runs: 3 },
    }
  : {
      s1: { clients: 200, rate: 10000, eventBytes: 100, durationMs: 20000, slowBps: 2048, stallTimeoutMs: 5000, drainMs: 3000 },
      s2: { clients: 50, bytesPerStream: 20 << 20, eventBytes: 150, maxMs: 60000 },
      s3: { clients: 100, rate: 100, eventBytes: 150, durationMs: 10000 },
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

/** Summarizes the gateway's one-JSON-line-per-stream log: counts of outcome/code values. */
function gatewayLogSummary(rec) {
  const counts = {};
  let lines = 0;
  for (const l of rec.stdoutLines) {
    let o;
    try {
      o = JSON.parse(l);
    } catch {
      continue;
    }
    lines++;
    const flat = { ...o, ...(o.meta || {}) };
    for (const k of ['outcome', 'code', 'reason', 'status']) {
      if (flat[k] !== undefined && typeof flat[k] !== 'object') {
        const key = `${k}=${flat[k]}`;
        counts[key] = (counts[key] || 0) + 1;
      }
    }
  }
  return { lines, counts };
}

/**
 * Bytes held in the gateway's userland per stream: what the upstream wrote, minus what is still
 * in the upstream's own buffer, minus what sits in kernel socket queues on both links
 * (/proc/net/tcp tx_queue + rx_queue), minus what the client received. Taken after freezing the
 * upstream and the clients so the numbers are still.
 */
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
    const held = s.written - s.pending - kUp - kDown - c.rawBytes;
    // Once the proxy closed the upstream connection (it ended the stream), what the upstream
    // wrote before that was dropped, not held. ('done' streams may still be writing their backlog.)
    const open = s.state !== 'aborted' && !c.ended && !c.failed;
    out.push({ tag: c.tag, mode: c.mode, open, produced: s.written, held: open ? Math.max(0, held) : 0, kernelUp: kUp, kernelDown: kDown, received: c.rawBytes });
  }
  return out;
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
  for (const l of rec.stdoutLines) {
    let o;
    try {
      o = JSON.parse(l);
    } catch {
      continue;
    }
    const f = { ...o, ...(o.meta || {}) };
    if (typeof f.outcome !== 'string') continue;
    const b = (byOutcome[f.outcome] = byOutcome[f.outcome] || { n: 0, maxDurationMs: 0, codes: {} });
    b.n++;
    if (typeof f.durationMs === 'number') b.maxDurationMs = Math.max(b.maxDurationMs, f.durationMs);
    if (typeof f.peakBufferedBytes === 'number') b.maxPeakBufferedBytes = Math.max(b.maxPeakBufferedBytes || 0, f.peakBufferedBytes);
    if (f.errorCode) b.codes[f.errorCode] = (b.codes[f.errorCode] || 0) + 1;
  }
  return byOutcome;
}

async function runS1() {
  const p = P.s1;
  const list = s1Targets();
  const rows = await eachTarget('S1', list, async (t) => {
    const policy = { stallTimeoutMs: p.stallTimeoutMs, ...(t.policy || {}) };
    await upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: false, tickMs: 10 });
    const h = await startTarget(t, policy);
    try {
      h.sampler.startSampling();
      await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['stalled', 'slow'], slowBps: p.slowBps, tagPrefix: 's1-' } }, 'started');
      await procs.sleep(p.durationMs + 300);
      await upCtl('/_freeze', {});
      await loadCall({ cmd: 'freeze' }, 'frozen');
      await procs.sleep(400);
      const stats = await upCtl('/_stats');
      const snap = await loadCall({ cmd: 'snapshot' }, 'snapshot');
      const samples = h.sampler.stopSampling();
      const held = heldPerStream(stats, snap, h.port);
      if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ streams: stats.streams.slice(0, 2), clients: snap.clients.slice(0, 2), held: held.slice(0, 4), nheld: held.length }));
      const res = await loadCall({ cmd: 'stop', drainMs: p.drainMs }, 'result', p.drainMs + 20000);
      const stalled = res.clients.filter((c) => c.mode === 'stalled');
      const slow = res.clients.filter((c) => c.mode === 'slow');
      const peak = max(samples.map((s) => s.rssMb));
      return {
        eventBytes: stats.eventBytes,
        idleRssMb: h.idle.rssMb,
        peakRssMb: peak,
        rssDeltaMb: peak - h.idle.rssMb,
        heldPerStreamMaxB: max(held.map((x) => x.held)),
        heldPerStreamMeanB: mean(held.map((x) => x.held)),
        producedPerStreamMeanB: mean(held.map((x) => x.produced)),
        kernelPerStreamMeanB: mean(held.map((x) => x.kernelUp + x.kernelDown)),
        producedPerStreamMaxB: max(held.map((x) => x.produced)),
        nominalPerStreamB: (p.rate * p.durationMs * stats.eventBytes) / 1000,
        stalledCutWithError: stalled.filter((c) => c.sawError).length,
        stalledReset: stalled.filter((c) => !c.sawError && c.failed && c.status === 200).length,
        stalledEnded: stalled.filter((c) => c.ended).length,
        stalledTotal: stalled.length,
        slowErrored: slow.filter((c) => c.sawError).length,
        slowCompleted: slow.filter((c) => c.sawDone).length,
        slowTotal: slow.length,
        slowMeanReceivedB: mean(slow.map((c) => c.payloadBytes)),
        failed: res.clients.filter((c) => c.failed && !c.status).length,
        stalledErrorCodes: countBy(stalled.filter((c) => c.sawError).map((c) => c.errorCode)),
        policy: t.tidegate ? policy : undefined,
        gatewayLog: gatewayLogSummary(h.rec),
        streamLog: t.tidegate ? streamLogStats(h.rec) : undefined,
        heldStreams: held.filter((x) => x.open).length,
        rssSeries: samples.map((s) => [s.tMs, +s.rssMb.toFixed(1)]),
      };
    } finally {
      await stopTarget(h);
    }
  });
  results.scenarios.S1 = rows;
  table(
    `S1: ${p.clients} clients (½ stalled, ½ slow at ${p.slowBps} B/s), upstream ${p.rate} events/s/stream, ${p.durationMs / 1000} s`,
    ['target', 'peak-idle RSS', 'held/stream max', 'produced/stream', 'stalled cut', 'slow errored', 'slow done', 'gateway cut ≤ ms'],
    Object.entries(rows).map(([n, r]) =>
      r.error
        ? [n, 'ERROR: ' + r.error.slice(0, 60)]
        : [n, `${r.rssDeltaMb.toFixed(1)} MB`, fmtB(r.heldPerStreamMaxB), `${fmtB(r.producedPerStreamMeanB)} of ${fmtB(r.nominalPerStreamB)}`, `${r.stalledCutWithError}/${r.stalledTotal}`, `${r.slowErrored}/${r.slowTotal}`, `${r.slowCompleted}/${r.slowTotal}`, cutSummary(r.streamLog)],
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

async function runS3() {
  const p = P.s3;
  const direct = { name: 'direct', label: 'direct to upstream', path: '/sse', start: async () => ({ rec: upstream.rec, port: upstream.port, direct: true }) };
  const list = [direct, ...activeTargets()];
  const rows = await eachTarget('S3', list, async (t) => {
    await upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: true, tickMs: 10 });
    const h = t.name === 'direct' ? { port: upstream.port, direct: true } : await startTarget(t);
    try {
      await loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], latency: true, tagPrefix: 's3-' } }, 'started');
      await waitProgress((x) => x.ended >= x.total, p.durationMs + 5000);
      const res = await loadCall({ cmd: 'stop', drainMs: 0 }, 'result');
      return { ...res.latency, completed: res.clients.filter((c) => c.sawDone).length, total: res.clients.length };
    } finally {
      if (!h.direct) await stopTarget(h);
    }
  });
  results.scenarios.S3 = rows;
  table(
    `S3: ${p.clients} clients × ${p.rate} events/s, emit→receive latency`,
    ['target', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'events', 'completed'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.p50?.toFixed(2), r.p90?.toFixed(2), r.p99?.toFixed(2), r.max?.toFixed(1), r.n, `${r.completed}/${r.total}`])),
  );
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
      await procs.sleep(500);
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
          await procs.sleep(p.cellMs + 300);
          await upCtl('/_freeze', {});
          await loadCall({ cmd: 'freeze' }, 'frozen');
          await procs.sleep(250);
          const stats = await upCtl('/_stats');
          const snap = await loadCall({ cmd: 'snapshot' }, 'snapshot');
          clearInterval(tm);
          const held = heldPerStream(stats, snap, h.port);
          if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ cell: [rate, cons], held: held.slice(0, 3), up: stats.streams.slice(0, 3) }));
          const res = await loadCall({ cmd: 'stop', drainMs: QUICK ? 300 : 800 }, 'result');
          // Cut by the proxy: an error event, or a reset (tidegate's stall cut resets the socket of a reader that reads nothing).
          const errored = res.clients.filter((c) => c.sawError || (c.failed && c.status === 200)).length;
          // Completed means [DONE] arrived within the cell, before the final drain.
          const done = snap.clients.filter((c) => c.sawDone && !c.sawError).length;
          const heldMax = max(held.map((x) => x.held));
          const producedMean = mean(held.map((x) => x.produced));
          const nominal = (rate * p.cellMs * stats.eventBytes) / 1000;
          let state;
          if (heldMax > 4 * budget || peak - rss0 > 100) state = 'grew';
          else if (errored > 0) state = 'terminated';
          else if (done === res.clients.length) state = 'completed';
          else state = 'slowed';
          cells.push({ rate, consumer: cons, state, errored, done, n: res.clients.length, heldMaxB: heldMax, rssGrowthMb: peak - rss0, producedRatio: nominal ? producedMean / nominal : null });
          await upCtl('/_config', { rate: 1, durationMs: 1 }); // drop leftover upstream streams
          await procs.sleep(150);
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
        return cell ? `${cell.state}${cell.state === 'terminated' ? ` ${cell.errored}/${cell.n}` : ''}` : '-';
      }),
    ]);
    table(`Stability map: ${name} (${p.streams} streams/cell, ${p.cellMs} ms)`, ['producer \\ consumer', ...p.consumers.map(consumerLabel)], rows);
  }
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
  if (results.gatewayFlagsMissing) console.log(`note: the gateway build rejects ${results.gatewayFlagsMissing.join(', ')}; ran without them (its defaults)`);
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:.]/g, '-');
  fs.writeFileSync(path.join(dir, `bench-${results.mode}-${stamp}.json`), JSON.stringify(results, null, 1));
  fs.writeFileSync(path.join(dir, `latest-${results.mode}.json`), JSON.stringify(results, null, 1));
  if (WRITE_DOCS) {
    const written = report.write(results, ROOT);
    console.log(`\nwrote ${written.join(', ')}`);
  }
  console.log(`\nbench finished in ${results.durationS.toFixed(0)} s; results in bench/results/`);
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
