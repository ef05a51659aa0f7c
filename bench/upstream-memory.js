'use strict';
// Upstream-side memory of openUpstreamStream() (src/http/request.ts), measured on real
// sockets on 127.0.0.1. The upstream server runs in a child process so its own buffers do not
// count.
//
//   node --expose-gc bench/upstream-memory.js paused [N=50]
//     N streams; the upstream writes SSE as fast as the socket allows; the consumer requests 3
//     chunks and then stops requesting (a paused downstream). After 1 s: arrayBuffers delta / N,
//     and per stream the bytes in the socket, the IncomingMessage, node-fetch's PassThrough and
//     what bufferedBytes() reports.
//   node --expose-gc bench/upstream-memory.js idle [N=2000]
//     N streams at 1 event/s, consumer with unbounded demand: JS heap and RSS per stream.
//   node --expose-gc bench/upstream-memory.js fast [N=10]
//     N streams read as fast as possible for 3 s: MB/s and client CPU s/GB (the cost of the read path).
//
// TIDEGATE_DIST=/path/to/compiled/src (default ../dist). Build one without touching dist/ with
//   npx tsc -p tsconfig.build.json --outDir /tmp/tg-dist
// Every loop is bounded; the child is stopped by PID at the end.
const path = require('node:path');
const http = require('node:http');
const { fork } = require('node:child_process');

const EVENT = Buffer.from(`data: ${'x'.repeat(92)}\n\n`); // 100 bytes

if (process.argv[2] === '--server') {
  const mode = process.argv[3];
  const batch = Buffer.concat(Array.from({ length: 100 }, () => EVENT)); // 10 KB, like bench/upstream.js ticks
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let stopped = false;
    res.on('close', () => (stopped = true));
    if (mode === 'idle') {
      res.write(EVENT);
      const timer = setInterval(() => (stopped ? clearInterval(timer) : res.write(EVENT)), 1000);
      return;
    }
    const pump = () => {
      for (let i = 0; i < 10_000 && !stopped; i++) {
        if (!res.write(batch)) return void res.once('drain', pump);
      }
      if (!stopped) setImmediate(pump);
    };
    pump();
  });
  server.keepAliveTimeout = 0;
  server.maxConnections = 20_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', (m) => m === 'stop' && process.exit(0));
  return;
}

const dist = process.env.TIDEGATE_DIST || path.resolve(__dirname, '../dist');
const { openUpstreamStream, upstreamAgent } = require(path.join(dist, 'http/request.js'));
const mode = process.argv[2] || 'paused';
const N = Number(process.argv[3] || (mode === 'idle' ? 2000 : mode === 'fast' ? 10 : 50));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const gc = () => {
  if (!global.gc) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) global.gc();
};
const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;

async function main() {
  const child = fork(__filename, ['--server', mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise((resolve) => child.once('message', (m) => resolve(m.port)));
  const url = `http://127.0.0.1:${port}/`;
  try {
    // Warm up the code paths once so the baseline includes compiled code and pools.
    await runOnce(url, 1, 200);
    await sleep(200);
    gc();
    const before = process.memoryUsage();
    const heapBefore = before.heapUsed;
    if (mode === 'fast') return void (await fast(url));
    const { streams, subscriptions } = await runOnce(url, N, mode === 'idle' ? 3000 : 1000, true);
    gc();
    const after = process.memoryUsage();
    const agent = upstreamAgent(new URL(url));
    const sockets = Object.values(agent.sockets).flat();
    if (process.env.DEBUG_SOCKETS) console.error(Object.entries(agent.sockets).map(([k, v]) => `${k}=${v.length}`), Object.keys(agent.freeSockets), Object.keys(agent.requests));
    const sum = (f) => sockets.reduce((a, s) => a + f(s), 0) / Math.max(1, sockets.length);
    const res = (s) => s._httpMessage?.res;
    const pt = (s) => res(s)?._readableState?.pipes?.[0];
    const out = {
      mode,
      streams: N,
      sockets: sockets.length,
      arrayBuffersPerStream: (after.arrayBuffers - before.arrayBuffers) / N,
      heapUsedPerStream: (after.heapUsed - heapBefore) / N,
      rssPerStream: (after.rss - before.rss) / N,
      socketReadable: sum((s) => s.readableLength),
      incomingReadable: sum((s) => res(s)?.readableLength ?? 0),
      incomingHwm: sum((s) => res(s)?.readableHighWaterMark ?? 0),
      passThroughReadable: sum((s) => pt(s)?.readableLength ?? 0),
      passThroughWritable: sum((s) => pt(s)?.writableLength ?? 0),
      bufferedBytes: streams.reduce((a, s) => a + (typeof s.bufferedBytes === 'function' ? s.bufferedBytes() : NaN), 0) / N,
    };
    for (const sub of subscriptions) sub.cancel();
    if (process.argv.includes('--json')) console.log(JSON.stringify(out));
    else {
      console.log(`${mode}: ${N} streams (${out.sockets} upstream sockets open)`);
      console.log(`  arrayBuffers delta / stream   ${kib(out.arrayBuffersPerStream)}`);
      console.log(`  heapUsed delta / stream       ${kib(out.heapUsedPerStream)}`);
      console.log(`  rss delta / stream            ${kib(out.rssPerStream)}`);
      console.log(`  socket readableLength         ${kib(out.socketReadable)}`);
      console.log(`  IncomingMessage readable      ${kib(out.incomingReadable)} (hwm ${kib(out.incomingHwm)})`);
      console.log(`  PassThrough readable/writable ${kib(out.passThroughReadable)} / ${kib(out.passThroughWritable)}`);
      console.log(`  bufferedBytes()               ${kib(out.bufferedBytes)}`);
    }
  } finally {
    child.send('stop');
    await sleep(100);
    if (child.exitCode === null) process.kill(child.pid);
  }
}

/** N streams read with unbounded demand for 3 s. */
async function fast(url) {
  const streams = await Promise.all(Array.from({ length: N }, () => openUpstreamStream({ url, method: 'GET' })));
  let bytes = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const subs = streams.map((s) => s.body.subscribeWithDemand({ next: (b) => (bytes += b.length), error: () => {} }));
  for (const sub of subs) sub.request(Infinity);
  await sleep(3000);
  const used = process.cpuUsage(cpu);
  const secs = (performance.now() - t0) / 1000;
  for (const sub of subs) sub.cancel();
  const cpuS = (used.user + used.system) / 1e6;
  console.log(`fast: ${N} streams, ${(bytes / secs / 1e6).toFixed(1)} MB/s, client CPU ${((cpuS / bytes) * 1e9).toFixed(2)} s/GB`);
}

/** Opens n streams; in paused mode requests 3 chunks then stops; waits settleMs. */
async function runOnce(url, n, settleMs, keep = false) {
  const streams = [];
  const subscriptions = [];
  const received = [];
  const outcome = { errors: 0, completed: 0, firstError: undefined };
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, () => openUpstreamStream({ url, method: 'GET', firstByteTimeoutMs: 60_000 })),
    );
    streams.push(...batch);
  }
  if (process.env.DEBUG_SOCKETS) console.error("opened", streams.length, Object.values(upstreamAgent(new URL(url)).sockets).flat().length);
  for (const s of streams) {
    const sub = s.body.subscribeWithDemand({ next: (b) => received.push(b.length), error: (e) => { outcome.errors++; outcome.firstError ??= e; }, complete: () => outcome.completed++ });
    sub.request(mode === 'idle' ? Infinity : 3);
    subscriptions.push(sub);
  }
  received.length = 0;
  await sleep(settleMs);
  received.length = 0;
  if (outcome.errors || outcome.completed) console.error(`  ${outcome.errors} errors, ${outcome.completed} completed`, outcome.firstError?.message ?? '');
  if (!keep) {
    for (const sub of subscriptions) sub.cancel();
    return { streams: [], subscriptions: [] };
  }
  return { streams, subscriptions };
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
