'use strict';
// S3: emit → receive latency, 100 clients × 100 events/s (see the comment on run()).
const { table } = require('../lib/harness');

/**
 * S3 runs twice. `S3` (the one the target is checked on): every stream emits on its own 10 ms
 * schedule, phases spread as connections arrive (the upstream ticks every 1 ms), as independent
 * model streams do. `S3burst`: the upstream ticks every 10 ms and emits one event on all 100
 * streams at once, so every proxy (and the load generator) handles 100 events back to back; its
 * p99 measures that batch, and even "direct" needs about 3 ms for it on this machine.
 */
async function run(hn) {
  const { P, results } = hn;
  const p = P.s3;
  const direct = { name: 'direct', label: 'direct to upstream', path: '/sse', start: async () => ({ rec: hn.upstream.rec, port: hn.upstream.port, direct: true }) };
  const variants = [
    ['S3', 1, 'each stream on its own schedule'],
    ['S3burst', 10, 'all streams emit in the same tick'],
  ];
  // Quick mode checks the harness: the burst run adds nothing to that.
  for (const [key, tickMs, how] of hn.quick ? variants.slice(0, 1) : variants) {
    // The --ref build's rows (`@before`) in S3 only: the paired latency figure.
    const list = [direct, ...hn.activeTargets({ scenario: key, before: key === 'S3' })];
    const rows = await hn.eachTarget(key, list, async (t) => {
      const h = t.name === 'direct' ? { port: hn.upstream.port, direct: true } : await hn.startTarget(t);
      try {
        // Warm-up, not measured: the same load for warmupMs, so a JIT-compiled proxy runs optimized
        // code (as latency benchmarks do); the measured run then opens 100 new streams.
        if (p.warmupMs > 0) {
          await hn.upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.warmupMs, maxBytes: 1 << 30, ts: true, tickMs });
          await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], latency: true, tagPrefix: 's3w-' } }, 'started');
          await hn.waitProgress((x) => x.ended >= x.total, p.warmupMs + 5000);
          await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result');
        }
        await hn.upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: true, tickMs });
        await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], latency: true, tagPrefix: 's3-' } }, 'started');
        await hn.waitProgress((x) => x.ended >= x.total, p.durationMs + 5000);
        const res = await hn.loadCall({ cmd: 'stop', drainMs: 0, warmupEvents: p.rate }, 'result');
        return { ...res.latency, completed: res.clients.filter((c) => c.sawDone).length, total: res.clients.length, tickMs };
      } finally {
        if (!h.direct) await hn.stopTarget(h);
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

module.exports = { key: 'S3', run };
