'use strict';
// What every scenario shares: the parameters, the results object, the fake upstream and the load
// generator (both started once per run), starting and stopping a target with its samplers, and the
// console tables. bench/run.js creates one harness and hands it to each bench/scenarios/*.js.
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const procs = require('./procs');
const { Sampler } = require('./sampler');
const { OwnSocketWatch } = require('./kernel-tcp');

const ROOT = path.resolve(__dirname, '../..');

const countBy = (a) => a.reduce((m, k) => ((m[k] = (m[k] || 0) + 1), m), {});
const sum = (a) => a.reduce((x, y) => x + y, 0);
const max = (a) => a.reduce((x, y) => Math.max(x, y), 0);
const mean = (a) => (a.length ? sum(a) / a.length : 0);
const fmtB = (b) => (b == null ? 'n/a' : b >= 1 << 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`);

/** The q-quantile of an ascending array (nearest rank), or null when empty. */
function percentile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Prints a plain-text table to stdout. */
function table(title, cols, rows) {
  const w = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells) => cells.map((c, i) => String(c ?? '').padEnd(w[i])).join('  ');
  console.log(`\n${title}\n${line(cols)}\n${w.map((n) => '-'.repeat(n)).join('  ')}`);
  for (const r of rows) console.log(line(r));
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
 * One run's shared state and plumbing. `P` holds the scenarios' parameters, `results` what is
 * written to bench/results/*.json; `targets()` the systems under test (the current build, the
 * `--ref` build's tidegate targets as `<name>@before`, and `--variant` configurations).
 */
class Harness {
  constructor({ P, results, quick, targetFilter, targets }) {
    this.P = P;
    this.results = results;
    this.quick = quick;
    this.targetFilter = targetFilter;
    this.allTargets = targets;
    this.upstream = null; // {rec, port, url}
    this.load = null; // forked load generator
  }

  async http(method, url, body) {
    const res = await fetch(url, { method, body: body ? JSON.stringify(body) : undefined, headers: { 'content-type': 'application/json' } });
    return res.json();
  }

  /** The fake upstream's control API: POST /_config, /_freeze, /_unfreeze; GET /_stats. */
  upCtl(p, body) {
    return this.http(body === undefined && p === '/_stats' ? 'GET' : 'POST', this.upstream.url + p, body);
  }

  /** Sends one IPC command to the load generator and waits for its answer of `type`. */
  loadCall(msg, type, timeoutMs = 30000) {
    const child = this.load.child;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        child.off('message', on);
        reject(new Error(`load generator: no ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      const on = (m) => {
        if (m.type === type || m.type === 'error') {
          clearTimeout(t);
          child.off('message', on);
          if (m.type === 'error') reject(new Error(m.message));
          else resolve(m);
        }
      };
      child.on('message', on);
      child.send(msg);
    });
  }

  async startUpstream() {
    const port = await procs.freePort();
    const rec = procs.start('upstream', process.execPath, [path.join(ROOT, 'bench/upstream.js'), '--port', String(port)], { cwd: ROOT });
    await procs.waitForPort(port, 10000, rec);
    this.upstream = { rec, port, url: `http://127.0.0.1:${port}` };
  }

  ensureLoad() {
    if (this.load && this.load.child.exitCode === null) return;
    this.load = procs.forkModule('load', path.join(ROOT, 'bench/load.js'));
  }

  /**
   * Starts a target on a fresh port and takes its idle RSS. The handle samples the target's RSS
   * and CPU (`h.sampler`) and the kernel queues of its own sockets (`h.sockets`, every 500 ms).
   */
  async startTarget(t, policy) {
    const port = await procs.freePort();
    const h = await t.start({ port, upstreamUrl: this.upstream.url, policy });
    if (h.unsupported && h.unsupported.length) this.results.gatewayFlagsMissing = h.unsupported;
    await procs.sleep(this.quick ? 200 : 400);
    h.sampler = new Sampler(h.rec.pid, { intervalMs: 100, withChildren: h.sampleChildren });
    h.idle = h.sampler.read();
    h.sockets = new OwnSocketWatch({ listenPort: h.port, upstreamPort: this.upstream.port });
    // Reading /proc/net/tcp costs the kernel time per socket on the host: with thousands of
    // sockets (S4) one read takes tens of ms, so the samples are spaced to stay under ~5% of a core.
    const tick = () => {
      const t0 = performance.now();
      h.sockets.sample();
      if (!h.socketsStopped) h.socketsTimer = setTimeout(tick, Math.max(500, 20 * (performance.now() - t0)));
    };
    h.socketsTimer = setTimeout(tick, 500);
    return h;
  }

  /** Stops sampling the target's own sockets; their kernel queues since it started (see OwnSocketWatch). */
  ownSockets(h) {
    this.stopSocketWatch(h);
    return h.sockets.result();
  }

  stopSocketWatch(h) {
    h.socketsStopped = true;
    clearTimeout(h.socketsTimer);
  }

  async stopTarget(h) {
    if (!h) return;
    this.stopSocketWatch(h);
    h.sampler.stopSampling();
    await procs.stop(h.rec);
    if (h.cleanup) h.cleanup();
  }

  /**
   * The targets to run, in order, after --targets and availability (the unavailable ones are
   * recorded in results.skipped). `opts.before`: include the `--ref` build's `@before` targets,
   * each right after its current counterpart, so the two run interleaved. `opts.scenario`: the
   * scenario's results key (a variant may be limited to some scenarios).
   */
  activeTargets(opts = {}) {
    const out = [];
    for (const t of this.allTargets) {
      if (t.before && !opts.before) continue;
      if (t.variantScenarios && !t.variantScenarios.includes(opts.scenario)) continue;
      if (opts.filter && !opts.filter(t)) continue;
      if (this.targetFilter && !this.targetFilter.includes(t.name) && !((t.before || t.variant) && this.targetFilter.includes(t.baseName))) continue;
      const a = t.available();
      if (!a.ok) {
        if (!this.results.skipped.some((s) => s.target === t.name)) this.results.skipped.push({ target: t.name, why: a.why });
        continue;
      }
      out.push(t);
    }
    return out;
  }

  /** Runs fn(target) for each target, recording a failure instead of aborting the whole run. */
  async eachTarget(scenario, list, fn) {
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

  /** Polls the load generator's progress until pred(progress) or maxMs. */
  async waitProgress(pred, maxMs, flowWindowMs) {
    const deadline = Date.now() + maxMs;
    let pr;
    do {
      pr = await this.loadCall({ cmd: 'progress', flowWindowMs }, 'progress');
      if (pred(pr)) return pr;
      await procs.sleep(100);
    } while (Date.now() < deadline);
    return pr;
  }

  /** Runs a child script to its end (at most timeoutMs) and returns its last JSON stdout line. */
  async runScript(name, file, args, timeoutMs) {
    const rec = procs.start(name, process.execPath, [file, ...args], { cwd: ROOT });
    await waitExit(rec, timeoutMs);
    return { rec, json: lastJson(rec) };
  }
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

/** "error: …" cells for a row that failed, padded to `width` cells. */
function errorRow(name, r, width) {
  return [name, 'ERROR: ' + String(r.error).slice(0, 60), ...Array(Math.max(0, width - 2)).fill('')];
}

module.exports = { Harness, ROOT, table, errorRow, logRecords, gatewayLogSummary, streamLogStats, countBy, sum, max, mean, fmtB, percentile };
