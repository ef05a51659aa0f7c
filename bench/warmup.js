'use strict';
// How a fresh proxy process warms up: streams of the set-up scenario's shape (the first event
// with the headers, one more, the end) opened `concurrency` at a time against a newly started
// proxy, and the proxy's CPU per stream in consecutive windows of `window` streams, from /proc
// (10 ms ticks): main thread / whole process. A Node proxy's first windows cost more while V8
// compiles and optimizes the code its streams run; the later ones are its warm cost.
//
// Usage: node bench/warmup.js [--target tidegate-pass|tidegate-openai|tidegate-responses|naive|pipeline|hpm]
//                             [--windows 8] [--window 1000] [--concurrency 20] [--runs 2]
//                             [--warmup-streams N]   (tidegate: its own warm-up before it listens; default 0)
//                             [--node-flags '--flag ...']   (V8/node flags for the proxy process)
// Linux only (/proc). Prints one line per run: how long the proxy took to listen, then main/process
// ms per stream by window.
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const procs = require('./lib/procs');
const { tidegateCommand, BENCH_LIMITS } = require('./targets');

const ROOT = path.resolve(__dirname, '..');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const target = flag('--target', 'tidegate-pass');
const windows = Number(flag('--windows', 8));
const windowSize = Number(flag('--window', 1000));
const concurrency = Number(flag('--concurrency', 20));
const runs = Number(flag('--runs', 2));
const warmupStreams = Number(flag('--warmup-streams', 0));
const nodeFlags = flag('--node-flags', '').split(/\s+/).filter(Boolean);
const PATHS = { 'tidegate-pass': '/sse', 'tidegate-openai': '/v1/chat/completions', 'tidegate-responses': '/v1/responses' };
const BASELINES = ['naive', 'pipeline', 'hpm'];
if (!PATHS[target] && !BASELINES.includes(target)) {
  console.error(`unknown --target ${target}: one of ${[...Object.keys(PATHS), ...BASELINES].join(', ')}`);
  process.exit(2);
}
const route = PATHS[target] || '/sse';

function post(port, p, obj) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(obj);
    const req = http.request({ host: '127.0.0.1', port, path: p, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** One stream: a request on its own connection, read to the end. Resolves with the bytes read. */
function stream(port) {
  return new Promise((resolve) => {
    const body = JSON.stringify(route === '/v1/responses' ? { model: 'bench', stream: true, input: 'bench' } : { model: 'bench', stream: true, messages: [{ role: 'user', content: 'bench' }] });
    const socket = net.connect({ host: '127.0.0.1', port });
    let bytes = 0;
    socket.on('connect', () => socket.write(`POST ${route} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`));
    socket.on('data', (d) => (bytes += d.length));
    socket.on('close', () => resolve(bytes));
    socket.on('error', () => undefined);
  });
}

async function streams(port, count) {
  let opened = 0;
  let failed = 0;
  const worker = async () => {
    while (opened < count) {
      opened++;
      if ((await stream(port)) < 100) failed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return failed;
}

/** CPU ms of a /proc stat line (utime + stime, in 10 ms ticks). */
const cpuMs = (file) => {
  const f = fs.readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

async function oneRun() {
  const upPort = await procs.freePort();
  const upstream = procs.start('upstream', process.execPath, [path.join(ROOT, 'bench/upstream.js'), '--port', String(upPort)]);
  await procs.waitForPort(upPort, 10000, upstream);
  await post(upPort, '/_config', { rate: 100, eventBytes: 150, durationMs: 15, firstEventNow: true, chunk: 'event' });
  const port = await procs.freePort();
  const upstreamUrl = `http://127.0.0.1:${upPort}`;
  let proxy;
  let tmpDir;
  if (BASELINES.includes(target)) {
    proxy = procs.start(target, process.execPath, [...nodeFlags, path.join(ROOT, 'bench/baselines.js'), '--mode', target, '--port', String(port), '--upstream', upstreamUrl]);
  } else {
    tmpDir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'tidegate-warmup-'));
    const c = tidegateCommand({ port, upstreamUrl, config: { limits: BENCH_LIMITS, warmup: { streams: warmupStreams } }, tmpDir });
    proxy = procs.start(target, c.cmd, [...nodeFlags, ...c.args], { env: c.env });
  }
  const spawnedAt = performance.now();
  await procs.waitForPort(port, 30000, proxy);
  const startMs = Math.round(performance.now() - spawnedAt);
  const pid = proxy.pid;
  const row = [];
  let failed = 0;
  for (let w = 0; w < windows; w++) {
    const m0 = cpuMs(`/proc/${pid}/task/${pid}/stat`);
    const p0 = cpuMs(`/proc/${pid}/stat`);
    failed += await streams(port, windowSize);
    const m1 = cpuMs(`/proc/${pid}/task/${pid}/stat`);
    const p1 = cpuMs(`/proc/${pid}/stat`);
    row.push(`${((m1 - m0) / windowSize).toFixed(2)}/${((p1 - p0) / windowSize).toFixed(2)}`);
  }
  await procs.stop(proxy);
  await procs.stop(upstream);
  if (tmpDir !== undefined) fs.rmSync(tmpDir, { recursive: true, force: true });
  return { row, failed, startMs };
}

(async () => {
  procs.installHooks();
  console.log(`${target}${PATHS[target] ? ` (warm-up ${warmupStreams} streams)` : ''}${nodeFlags.length ? ` [${nodeFlags.join(' ')}]` : ''}: main/process CPU ms per stream, windows of ${windowSize} streams, ${concurrency} at a time`);
  for (let r = 0; r < runs; r++) {
    const { row, failed, startMs } = await oneRun();
    console.log(`run ${r + 1}: listening after ${startMs} ms; ${row.join('  ')}${failed ? `  (${failed} streams failed)` : ''}`);
  }
  process.exit(0);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
