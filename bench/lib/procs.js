'use strict';
// Child-process bookkeeping for the bench: every process we start is registered here and
// stopped by PID (never by name) on normal exit, on error and on SIGINT/SIGTERM.
const { spawn, fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const net = require('node:net');

const children = new Set();
let hooksInstalled = false;

function installHooks() {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const onSignal = (sig) => {
    process.stderr.write(`\nbench: ${sig}, stopping ${children.size} child process(es)\n`);
    killAllSync();
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killAllSync);
  process.on('uncaughtException', (err) => {
    process.stderr.write(`bench: uncaught ${err && err.stack ? err.stack : err}\n`);
    killAllSync();
    process.exit(1);
  });
}

function killAllSync() {
  for (const c of children) {
    // nginx workers are grandchildren of this process: stop them by PID as well.
    for (const pid of descendants(c.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  children.clear();
}

function descendants(pid) {
  const out = [];
  try {
    for (const d of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
      } catch {
        /* raced with exit */
      }
    }
  } catch {
    /* no /proc */
  }
  return out;
}

/** Hard limit on open files, read from /proc (bash's `ulimit -Hn`). */
function fdLimits() {
  try {
    const text = fs.readFileSync('/proc/self/limits', 'utf8');
    const m = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(text);
    if (m) {
      const n = (s) => (s === 'unlimited' ? 1 << 20 : Number(s));
      return { soft: n(m[1]), hard: n(m[2]) };
    }
  } catch {
    /* not Linux */
  }
  return { soft: 1024, hard: 1024 };
}

/**
 * Spawns a command through `sh -c 'ulimit -n <hard>; exec "$@"'`, so the fd limit is raised
 * to the hard limit and the PID we hold is the command itself (exec replaces the shell).
 */
function start(name, cmd, args, opts = {}) {
  installHooks();
  const hard = fdLimits().hard;
  const child = spawn('/bin/sh', ['-c', `ulimit -n ${hard} 2>/dev/null; exec "$@"`, 'sh', cmd, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...(opts.env || {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const rec = { name, pid: child.pid, child, stdoutLines: [], stderrTail: '', exited: null };
  children.add(child);
  let partial = '';
  const maxLines = opts.maxLines || 50000;
  // BENCH_STDOUT_DIR=/tmp/out keeps each process's whole stdout in <dir>/<name>.<pid>.log, e.g. V8's
  // --trace-gc-nvp lines given through BENCH_GATEWAY_NODE_FLAGS.
  const stdoutFile = process.env.BENCH_STDOUT_DIR ? path.join(process.env.BENCH_STDOUT_DIR, `${name}.${child.pid}.log`) : undefined;
  child.stdout.on('data', (d) => {
    if (stdoutFile !== undefined) fs.appendFileSync(stdoutFile, d);
    partial += d.toString('utf8');
    let i;
    while ((i = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      if (rec.stdoutLines.length < maxLines) rec.stdoutLines.push(line);
    }
    if (partial.length > 1 << 20) partial = '';
  });
  child.stderr.on('data', (d) => {
    rec.stderrTail = (rec.stderrTail + d.toString('utf8')).slice(-4000);
  });
  child.on('exit', (code, signal) => {
    rec.exited = { code, signal };
    children.delete(child);
  });
  return rec;
}

/** Forks a Node module with an IPC channel (used for the load generator). */
function forkModule(name, modulePath, args = []) {
  installHooks();
  const child = fork(modulePath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return { name, pid: child.pid, child };
}

/** Stops a child by PID: SIGTERM, then SIGKILL after graceMs. */
async function stop(rec, graceMs = 1500) {
  if (!rec || !rec.child) return;
  const child = rec.child;
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return;
  }
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(child.pid, 'SIGTERM');
  } catch {
    /* gone */
  }
  const t = setTimeout(() => {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, graceMs);
  await Promise.race([exited, sleep(graceMs + 2000)]);
  clearTimeout(t);
  children.delete(child);
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves when 127.0.0.1:port accepts a TCP connection; rejects after timeoutMs. */
async function waitForPort(port, timeoutMs = 10000, rec) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (rec && rec.exited) throw new Error(`${rec.name} exited early (${JSON.stringify(rec.exited)}): ${rec.stderrTail}`);
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        // A connect to a local port nothing listens on can meet itself (TCP simultaneous open)
        // when the kernel picks that very port as its source: not a listener.
        const self = s.localPort === port;
        s.destroy();
        resolve(!self);
      });
      s.on('error', () => resolve(false));
      s.setTimeout(500, () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`port ${port} not ready after ${timeoutMs} ms${rec ? ': ' + rec.stderrTail : ''}`);
}

/** An unused TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

module.exports = { start, stop, forkModule, waitForPort, freePort, sleep, fdLimits, killAllSync, installHooks };
