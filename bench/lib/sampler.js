'use strict';
// /proc sampling of a process tree: VmRSS from /proc/<pid>/status, utime+stime from /proc/<pid>/stat.
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

let clkTck = 100;
try {
  clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
} catch {
  /* default */
}

function readRssKb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds (user + system) of one process, all its threads; with `mainThread`, of its main
 * thread only (`/proc/<pid>/task/<pid>/stat`: the event loop's JavaScript, and whatever GC work
 * V8 does not hand to its helper threads).
 */
function readCpuS(pid, mainThread = false) {
  try {
    const s = fs.readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces: fields after the closing paren start at field 3 (state).
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / clkTck; // fields 14 and 15
  } catch {
    return 0;
  }
}

/** Direct children of pid (scan of /proc, since /proc/<pid>/task/<pid>/children may be absent). */
function childPids(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(d));
    } catch {
      /* raced with exit */
    }
  }
  return out;
}

/**
 * Samples RSS and CPU of a root pid (plus its children when `withChildren`, for nginx's
 * workers) every intervalMs, bounded to maxSamples. `mark()` returns the current reading.
 */
class Sampler {
  constructor(rootPid, { intervalMs = 100, withChildren = false, maxSamples = 20000 } = {}) {
    this.pids = withChildren ? [rootPid, ...childPids(rootPid)] : [rootPid];
    this.intervalMs = intervalMs;
    this.maxSamples = maxSamples;
    this.samples = [];
    this.t0 = Date.now();
    this.timer = null;
  }
  read() {
    let rssKb = 0;
    let cpuS = 0;
    let mainCpuS = 0;
    for (const p of this.pids) {
      rssKb += readRssKb(p);
      cpuS += readCpuS(p);
      mainCpuS += readCpuS(p, true);
    }
    return { tMs: Date.now() - this.t0, rssMb: rssKb / 1024, cpuS, mainCpuS };
  }
  startSampling() {
    this.t0 = Date.now();
    this.samples = [this.read()];
    this.timer = setInterval(() => {
      if (this.samples.length < this.maxSamples) this.samples.push(this.read());
    }, this.intervalMs);
    return this;
  }
  stopSampling() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.samples.push(this.read());
    return this.samples;
  }
  peakRssMb() {
    return this.samples.reduce((m, s) => Math.max(m, s.rssMb), 0);
  }
}

module.exports = { Sampler, readRssKb, readCpuS, childPids, clkTck };
