'use strict';
// SETUP: stream set-up rate. Streams are opened at a steady rate (e.g. 250, 500, 1000 per second)
// for a few seconds; each gets its first event with the upstream's response headers, one more
// event ~200 ms later, and ends. Measures time to first byte and to the first event (p50, p99),
// and the proxy's CPU per stream (set-up, two events, teardown), against "direct" (no proxy).
const procs = require('../lib/procs');
const { table, percentile } = require('../lib/harness');

function stats(values) {
  const a = values.filter((v) => typeof v === 'number').sort((x, y) => x - y);
  return { n: a.length, p50: percentile(a, 0.5), p99: percentile(a, 0.99), max: a.length ? a[a.length - 1] : null };
}

async function run(hn) {
  const { P, results } = hn;
  const p = P.setup;
  const direct = { name: 'direct', label: 'direct to upstream', path: '/sse' };
  const list = [direct, ...hn.activeTargets({ before: true, scenario: 'SETUP' })];
  const rows = await hn.eachTarget('SETUP', list, async (t) => {
    const h = t === direct ? { port: hn.upstream.port, direct: true } : await hn.startTarget(t);
    try {
      const byRate = [];
      for (const rate of p.ratesPerS) {
        const streams = Math.round((rate * p.openForMs) / 1000);
        await hn.upCtl('/_config', { rate: 5, eventBytes: p.eventBytes, durationMs: p.streamMs, maxBytes: 1 << 30, ts: false, tickMs: 10, firstEventNow: true });
        const cpu0 = h.direct ? null : h.sampler.read().cpuS;
        const t0 = Date.now();
        await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: streams, modes: ['fast'], openRatePerS: rate, tagPrefix: `su${rate}-` } }, 'started', p.openForMs + 30000);
        const pr = await hn.waitProgress((x) => x.ended >= x.total, p.streamMs + p.settleMaxMs);
        const wallS = (Date.now() - t0) / 1000;
        const cpuS = h.direct ? null : h.sampler.read().cpuS - cpu0;
        const res = await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result', 60000);
        const ok = res.clients.filter((c) => c.status === 200);
        byRate.push({
          ratePerS: rate,
          streams,
          wallS,
          ttfbMs: stats(res.clients.map((c) => c.firstByteMs)),
          firstEventMs: stats(res.clients.map((c) => c.firstEventMs)),
          completed: res.clients.filter((c) => c.sawDone).length,
          refused: res.clients.filter((c) => c.status && c.status !== 200).length,
          failed: res.clients.filter((c) => c.failed && !c.status).length,
          noFirstEvent: ok.filter((c) => c.firstEventMs === null).length,
          allEnded: pr.ended >= pr.total,
          cpuS,
          cpuMsPerStream: cpuS === null ? null : (cpuS * 1000) / streams,
        });
        await procs.sleep(hn.quick ? 200 : 1000); // let TIME_WAIT and GC settle between rates
      }
      return { byRate, ownSockets: h.direct ? undefined : hn.ownSockets(h) };
    } finally {
      if (!h.direct) await hn.stopTarget(h);
    }
  });
  results.scenarios.SETUP = rows;
  const lines = [];
  for (const [n, r] of Object.entries(rows)) {
    if (r.error) lines.push([n, 'ERROR: ' + r.error.slice(0, 60)]);
    else for (const x of r.byRate) lines.push([n, x.ratePerS, x.ttfbMs.p50?.toFixed(2), x.ttfbMs.p99?.toFixed(2), x.firstEventMs.p99?.toFixed(2), x.cpuMsPerStream?.toFixed(3) ?? 'n/a', `${x.completed}/${x.streams}`, x.refused + x.failed]);
  }
  table(`SETUP: streams opened at a steady rate for ${p.openForMs / 1000} s, each ~${p.streamMs} ms long`, ['target', 'opened/s', 'TTFB p50 ms', 'TTFB p99 ms', '1st event p99 ms', 'CPU ms/stream', 'completed', 'refused+failed'], lines);
}

module.exports = { key: 'SETUP', run };
