'use strict';
// Joins the two ends of a traced set-up run (bench/lib/accept-trace.js) by the client's port and
// prints, per proxy process and rate step, where the time to first byte went (p50 / p99, ms):
//
//   accept queue   connect → accept   the connection waited in the kernel for the proxy's event loop
//   request        accept → request   the proxy read and parsed the request
//   first write    request → write    the upstream call, up to the response's first bytes
//   delivery       write → byte       the kernel and the load generator's read
//
// Usage: node bench/accept-trace.js <BENCH_TRACE_DIR>
const fs = require('node:fs');
const path = require('node:path');
const { table, percentile } = require('./lib/harness');

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node bench/accept-trace.js <BENCH_TRACE_DIR>');
  process.exit(2);
}
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
const clients = new Map(); // port → load-generator records, oldest first
for (const f of files.filter((x) => x.startsWith('load.'))) {
  for (const r of read(f).records) if (r.port) (clients.get(r.port) || clients.set(r.port, []).get(r.port)).push(r);
}

/**
 * The client connection a proxy's record belongs to: the same port, the latest to connect before
 * the accept, its first byte read after the proxy wrote it. A port the load generator used
 * earlier matches no request of the harness's own (its readiness checks are not traced).
 */
function clientOf(p) {
  let best;
  for (const c of clients.get(p.port) || []) if (c.connect <= p.accept + 1 && (best === undefined || c.connect > best.connect)) best = c;
  return best !== undefined && best.byte >= p.write - 1 ? best : undefined;
}

/** Splits records (sorted by connect time) into the rate steps, which idle gaps of ≥ 500 ms separate (the bench pauses 1 s between them; a --quick run's 200 ms pauses do not split). */
function steps(rows) {
  const out = [];
  let cur = [];
  for (const r of rows) {
    if (cur.length && r.c.connect - cur[cur.length - 1].c.connect >= 500) out.push(cur), (cur = []);
    cur.push(r);
  }
  if (cur.length) out.push(cur);
  return out;
}

const q = (values) => {
  const a = values.filter((v) => Number.isFinite(v)).sort((x, y) => x - y);
  return a.length ? `${percentile(a, 0.5).toFixed(1)} / ${percentile(a, 0.99).toFixed(1)}` : 'n/a';
};
const lines = [];
for (const f of files.filter((x) => x.startsWith('proxy.')).sort()) {
  const { script, name, records } = read(f);
  const rows = records.filter((p) => p.write > 0).map((p) => ({ p, c: clientOf(p) })).filter((r) => r.c && r.c.byte > 0);
  rows.sort((x, y) => x.c.connect - y.c.connect);
  const label = `${script === 'cli.js' ? 'tidegate' : name || script} ${records[0] ? records[0].path : ''} (pid ${f.split('.')[1]})`;
  // A step of a few streams is the harness's own traffic or a straggler, not a rate.
  for (const s of steps(rows).filter((x) => x.length >= 20)) {
    const spanS = (s[s.length - 1].c.connect - s[0].c.connect) / 1000;
    lines.push([
      label,
      s.length,
      spanS > 0 ? Math.round(s.length / spanS) : 'n/a',
      q(s.map((r) => r.p.accept - r.c.connect)),
      q(s.map((r) => r.p.request - r.p.accept)),
      q(s.map((r) => r.p.write - r.p.request)),
      q(s.map((r) => r.c.byte - r.p.write)),
      q(s.map((r) => r.c.byte - r.c.connect)),
    ]);
  }
}
table('Set-up time to first byte, by stage (ms, p50 / p99), from connect', ['proxy', 'streams', 'opened/s', 'accept queue', 'request', 'first write', 'delivery', 'connect → first byte'], lines);
