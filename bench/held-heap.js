'use strict';
// What a held stream costs the gateway in heap and RSS, by kind of object: the gateway (started
// as the bench starts it, with a small preload that answers SIGUSR2 with a full GC, its memory
// figures and a heap snapshot), bench/upstream.js at 1 event/s per stream, and raw-socket clients
// in this process. After a warm-up of `--warm` streams it measures, opens `--streams` more,
// measures again and prints the difference per added stream: RSS, heap used after a GC, and the
// snapshot's self sizes by kind, by constructor and by closure (with its source position).
//
//   node bench/held-heap.js [--route openai|pass|responses] [--warm 500] [--streams 2000]
//                           [--top 40] [--keep DIR]
//   node bench/held-heap.js --analyze A.heapsnapshot B.heapsnapshot STREAMS_ADDED
//
// BENCH_GATEWAY_CLI=/path/to/dist/gateway/cli.js measures another build. Every process it starts
// is stopped by PID at the end.
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');
const http = require('node:http');
const { spawn } = require('node:child_process');
const { tidegateCommand, GATEWAY_CLI } = require('./targets');

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const ROUTE = arg('--route', 'openai');
const WARM = Number(arg('--warm', 500));
const STREAMS = Number(arg('--streams', 2000));
const TOP = Number(arg('--top', 40));
const PATHS = { openai: '/v1/chat/completions', pass: '/sse', responses: '/v1/responses' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PRELOAD = `
const v8 = require('node:v8');
const fs = require('node:fs');
process.on('SIGUSR2', () => {
  const file = process.env.HELD_HEAP_OUT + '.' + Date.now();
  const rss0 = process.memoryUsage().rss;
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  if (process.env.HELD_HEAP_SNAPSHOT !== '0') v8.writeHeapSnapshot(file + '.heapsnapshot');
  fs.writeFileSync(file + '.json', JSON.stringify({ rssBeforeGc: rss0, ...m, spaces: v8.getHeapSpaceStatistics() }));
});
`;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitPort(port, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true)));
      s.on('error', () => r(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`port ${port} not up`);
}

function post(port, p, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const clients = [];
function openClient(port, p, i) {
  const c = { bytes: 0, closed: false, sock: null };
  const body = JSON.stringify(p === '/v1/responses' ? { model: 'bench', stream: true, user: `h${i}`, input: 'bench' } : { model: 'bench', stream: true, user: `h${i}`, messages: [{ role: 'user', content: 'bench' }] });
  c.sock = net.connect({ host: '127.0.0.1', port }, () => {
    c.sock.write(`POST ${p} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  c.sock.on('data', (b) => {
    c.bytes += b.length;
    c.tail = b.subarray(Math.max(0, b.length - 300)).toString();
  });
  c.sock.on('close', () => (c.closed = true));
  c.sock.on('error', () => {});
  clients.push(c);
}

/** Opens n streams, 200 every 100 ms, and waits until each has its first bytes (or closed). */
async function open(port, p, n) {
  for (let i = 0; i < n; i += 200) {
    for (let j = i; j < Math.min(n, i + 200); j++) openClient(port, p, clients.length);
    await sleep(100);
  }
  const end = Date.now() + 120000;
  while (Date.now() < end && clients.some((c) => !c.closed && c.bytes === 0)) await sleep(200);
  await sleep(3000);
}

const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

async function measure(gw, out) {
  const before = new Set(fs.readdirSync(path.dirname(out)));
  const rss = rssOf(gw.pid);
  process.kill(gw.pid, 'SIGUSR2');
  const end = Date.now() + 300000;
  for (;;) {
    const f = fs.readdirSync(path.dirname(out)).find((n) => !before.has(n) && n.endsWith('.json'));
    if (f) return { rss, ...JSON.parse(fs.readFileSync(path.join(path.dirname(out), f), 'utf8')), snapshot: path.join(path.dirname(out), f.replace(/\.json$/, '.heapsnapshot')) };
    if (Date.now() > end) throw new Error('no snapshot');
    await sleep(200);
  }
}

/** Self sizes of a heap snapshot by kind, by type/name and by closure source position. */
function aggregate(file) {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8'));
  const m = snap.snapshot.meta;
  const nf = m.node_fields;
  const NF = nf.length;
  const types = m.node_types[0];
  const ef = m.edge_fields;
  const EF = ef.length;
  const etypes = m.edge_types[0];
  const { nodes, edges, strings } = snap;
  const iType = nf.indexOf('type');
  const iName = nf.indexOf('name');
  const iSize = nf.indexOf('self_size');
  const iEc = nf.indexOf('edge_count');
  const eType = ef.indexOf('type');
  const eName = ef.indexOf('name_or_index');
  const eTo = ef.indexOf('to_node');
  const n = nodes.length / NF;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + iEc] * EF;
  }
  firstEdge[n] = edges.length;
  const edgeTo = (i, name) => {
    for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += EF) {
      const t = etypes[edges[e + eType]];
      if ((t === 'internal' || t === 'property' || t === 'context' || t === 'hidden' || t === 'shortcut') && strings[edges[e + eName]] === name) return edges[e + eTo] / NF;
    }
    return -1;
  };
  // Source positions of closures.
  const loc = new Map();
  const L = snap.locations || [];
  const lf = m.location_fields || ['object_index', 'script_id', 'line', 'column'];
  for (let k = 0; k < L.length; k += lf.length) loc.set(L[k] / NF, [L[k + 1], L[k + 2], L[k + 3]]);
  const scriptName = new Map();
  const scriptOf = (i) => {
    const sh = edgeTo(i, 'shared');
    if (sh < 0) return '?';
    const sc = edgeTo(sh, 'script_or_debug_info');
    if (sc < 0) return '?';
    if (scriptName.has(sc)) return scriptName.get(sc);
    const s = strings[nodes[sc * NF + iName]];
    const short = s.replace(/^.*\/dist\//, '').replace(/^.*\/node_modules\//, 'nm:');
    scriptName.set(sc, short);
    return short;
  };
  const kind = {};
  const byName = new Map();
  const closures = new Map();
  const files = new Map();
  const contextOwner = new Map();
  const add = (map, key, size) => {
    const r = map.get(key) || (map.set(key, { count: 0, size: 0 }), map.get(key));
    r.count++;
    r.size += size;
  };
  // A context is named after a closure that holds it, else after what else refers to it (a
  // suspended async function's generator, an inner context).
  const isContext = (i) => strings[nodes[i * NF + iName]] === 'system / Context';
  const referrer = new Map();
  for (let i = 0; i < n; i++) {
    const t = types[nodes[i * NF + iType]];
    for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += EF) {
      const to = edges[e + eTo] / NF;
      if (!isContext(to)) continue;
      if (t === 'closure' && strings[edges[e + eName]] === 'context') {
        if (!contextOwner.has(to)) contextOwner.set(to, i);
      } else if (!referrer.has(to) || isContext(referrer.get(to))) referrer.set(to, i);
    }
  }
  const closureKey = (i) => {
    const l = loc.get(i);
    return `${strings[nodes[i * NF + iName]] || '(anon)'} ${scriptOf(i)}:${l ? l[1] + 1 : '?'}`;
  };
  const contextKey = (i, depth = 0) => {
    if (contextOwner.has(i)) return closureKey(contextOwner.get(i));
    const r = referrer.get(i);
    if (r === undefined || depth > 5) return '(unreferenced)';
    if (isContext(r)) return `inner of ${contextKey(r, depth + 1)}`;
    const f = edgeTo(r, 'function');
    if (f >= 0) return `${strings[nodes[r * NF + iName]]} of ${closureKey(f)}`;
    return `${types[nodes[r * NF + iType]]}:${strings[nodes[r * NF + iName]].slice(0, 40)}`;
  };
  for (let i = 0; i < n; i++) {
    const t = types[nodes[i * NF + iType]];
    const name = strings[nodes[i * NF + iName]];
    const size = nodes[i * NF + iSize];
    let k = t;
    if (t === 'closure') k = 'closure';
    else if (name === 'system / Context') k = 'context';
    else if (t === 'concatenated string' || t === 'sliced string') k = 'string';
    kind[k] = kind[k] || { count: 0, size: 0 };
    kind[k].count++;
    kind[k].size += size;
    add(byName, `${t}:${name.length > 60 ? name.slice(0, 60) + '…' : name}`, size);
    if (t === 'closure') {
      add(closures, closureKey(i), size);
      add(files, closureKey(i).replace(/^\S+ /, '').replace(/:[^:]*$/, ''), size);
    } else if (name === 'system / Context') {
      const key = contextKey(i);
      add(closures, `  ctx of ${key}`, size);
      add(files, key.includes(' ') ? key.replace(/^.* /, '').replace(/:[^:]*$/, '') : key, size);
    } else if (t === 'closure' || name === 'native_bind') add(files, '(bound)', size);
  }
  return { kind, byName, closures, files, total: Object.values(kind).reduce((a, r) => a + r.size, 0) };
}

function diff(a, b, per) {
  const keys = new Set([...a.keys(), ...b.keys()]);
  const rows = [];
  for (const k of keys) {
    const x = a.get(k) || { count: 0, size: 0 };
    const y = b.get(k) || { count: 0, size: 0 };
    rows.push([k, (y.count - x.count) / per, (y.size - x.size) / per]);
  }
  return rows.sort((p, q) => Math.abs(q[2]) - Math.abs(p[2]));
}

function report(a, b, added) {
  const A = aggregate(a);
  const B = aggregate(b);
  console.log(`  snapshot self sizes: ${((B.total - A.total) / added).toFixed(0)} B per stream`);
  for (const [k, cnt, sz] of diff(new Map(Object.entries(A.kind)), new Map(Object.entries(B.kind)), added)) console.log(`    ${k.padEnd(24)} ${cnt.toFixed(1).padStart(7)} ${sz.toFixed(0).padStart(7)} B`);
  console.log('  by type:name');
  for (const [k, cnt, sz] of diff(A.byName, B.byName, added).slice(0, TOP)) console.log(`    ${cnt.toFixed(2).padStart(7)} ${sz.toFixed(0).padStart(6)} B  ${k.replace(/\n/g, '\\n')}`);
  console.log('  closures and contexts by source file');
  for (const [k, cnt, sz] of diff(A.files, B.files, added)) if (Math.abs(sz) >= 20) console.log(`    ${cnt.toFixed(2).padStart(7)} ${sz.toFixed(0).padStart(6)} B  ${k}`);
  console.log('  closures and their contexts');
  for (const [k, cnt, sz] of diff(A.closures, B.closures, added).slice(0, TOP * 4)) if (Math.abs(cnt) >= 0.5) console.log(`    ${cnt.toFixed(2).padStart(7)} ${sz.toFixed(0).padStart(6)} B  ${k}`);
}

async function main() {
  if (arg('--analyze')) return report(arg('--analyze'), argv[argv.indexOf('--analyze') + 2], Number(argv[argv.indexOf('--analyze') + 3]));
  const dir = arg('--keep') || fs.mkdtempSync(path.join(os.tmpdir(), 'held-heap-'));
  fs.mkdirSync(dir, { recursive: true });
  const preload = path.join(dir, 'preload.js');
  fs.writeFileSync(preload, PRELOAD);
  const upPort = await freePort();
  const gwPort = await freePort();
  const procs = [];
  const stopAll = () => procs.forEach((p) => p.exitCode === null && p.kill('SIGKILL'));
  process.on('exit', stopAll);
  try {
    const up = spawn(process.execPath, [path.join(ROOT, 'bench/upstream.js'), '--port', String(upPort)], { stdio: 'ignore' });
    procs.push(up);
    await waitPort(upPort, 10000);
    await post(upPort, '/_config', { rate: 1, eventBytes: 150, durationMs: 3600000, maxBytes: 1 << 30, ts: false, tickMs: 50 });
    const c = tidegateCommand({ cli: GATEWAY_CLI, port: gwPort, upstreamUrl: `http://127.0.0.1:${upPort}`, tmpDir: dir, nodeFlags: ['--expose-gc', '--require', preload] });
    const gw = spawn(c.cmd, c.args, { cwd: path.resolve(path.dirname(GATEWAY_CLI), '../..'), env: { ...process.env, ...c.env, HELD_HEAP_OUT: path.join(dir, 'm') }, stdio: ['ignore', 'ignore', 'inherit'] });
    procs.push(gw);
    await waitPort(gwPort, 15000);
    const p = PATHS[ROUTE];
    await open(gwPort, p, WARM);
    const warm = clients.filter((x) => !x.closed && x.bytes > 0).length;
    const a = await measure(gw, path.join(dir, 'm'));
    await open(gwPort, p, STREAMS);
    const live = clients.filter((x) => !x.closed && x.bytes > 0).length;
    const b = await measure(gw, path.join(dir, 'm'));
    const added = live - warm;
    const closed = clients.filter((x) => x.closed);
    if (closed.length > 0) console.log(`  a closed stream's last bytes: ${JSON.stringify(closed[0].tail)}`);
    const kb = (x) => (x / 1024).toFixed(2);
    console.log(`route ${ROUTE}: ${live} streams open (${clients.filter((x) => x.closed).length} closed), per added stream (${added}):`);
    console.log(`  RSS ${kb((b.rss - a.rss) / added)} KB  heapUsed ${kb((b.heapUsed - a.heapUsed) / added)} KB  heapTotal ${kb((b.heapTotal - a.heapTotal) / added)} KB  external ${kb((b.external - a.external) / added)} KB  arrayBuffers ${kb((b.arrayBuffers - a.arrayBuffers) / added)} KB  RSS-heapTotal ${kb((b.rss - b.heapTotal - (a.rss - a.heapTotal)) / added)} KB`);
    if (process.env.HELD_HEAP_SNAPSHOT === '0') return;
    report(a.snapshot, b.snapshot, added);
    if (!arg('--keep')) fs.rmSync(dir, { recursive: true, force: true });
  } finally {
    for (const c of clients) c.sock.destroy();
    stopAll();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
