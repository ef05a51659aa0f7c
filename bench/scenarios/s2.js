'use strict';
// S2: fast clients, unlimited upstream: CPU seconds per GB relayed. Two row sets: `S2` with the
// upstream writing batches of events per res.write() (~64 KiB HTTP chunks), and `S2chunk` with one
// res.write(), so one HTTP chunk, per event, as LLM servers write tokens.
const { table, streamLogStats, sum, fmtB } = require('../lib/harness');

/** Runs S2 in one chunk shape: `chunk` 'batch' (key S2) or 'event' (key S2chunk). */
async function runShape(hn, key, p, chunk) {
  const { results } = hn;
  const list = hn.activeTargets({ before: true, scenario: key });
  const rows = await hn.eachTarget(key, list, async (t) => {
    await hn.upCtl('/_config', { rate: 0, eventBytes: p.eventBytes, durationMs: p.maxMs, maxBytes: p.bytesPerStream, ts: false, chunk });
    const h = await hn.startTarget(t);
    try {
      const cpu0 = h.sampler.read().cpuS;
      const t0 = Date.now();
      await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['fast'], tagPrefix: `${key}-` } }, 'started');
      const pr = await hn.waitProgress((x) => x.ended >= x.total, p.maxMs + 2000);
      const wallS = (Date.now() - t0) / 1000;
      const cpu1 = h.sampler.read().cpuS;
      const ownSockets = hn.ownSockets(h);
      const res = await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result');
      const bytes = sum(res.clients.map((c) => c.payloadBytes));
      const events = sum(res.clients.map((c) => c.events));
      const notDone = res.clients.filter((c) => !c.sawDone);
      if (notDone.length) console.error(`  ${key} ${t.name}: not completed ${JSON.stringify(notDone.slice(0, 3))} gateway: ${JSON.stringify(t.tidegate ? streamLogStats(h.rec) : null)}`);
      const gb = bytes / 1e9;
      return {
        chunk,
        bytes,
        events,
        wallS,
        mbPerS: bytes / 1e6 / wallS,
        cpuS: cpu1 - cpu0,
        cpuSPerGb: gb > 0 ? (cpu1 - cpu0) / gb : null,
        cpuUsPerEvent: events > 0 ? ((cpu1 - cpu0) * 1e6) / events : null,
        fffd: sum(res.clients.map((c) => c.fffd)),
        completed: res.clients.filter((c) => c.sawDone).length,
        total: res.clients.length,
        allEnded: pr.ended >= pr.total,
        ownSockets,
      };
    } finally {
      await hn.stopTarget(h);
    }
  });
  results.scenarios[key] = rows;
  table(
    `${key}: ${p.clients} fast clients, unlimited upstream, ${fmtB(p.bytesPerStream)} per stream, ${chunk === 'event' ? 'one HTTP chunk per event' : 'batched HTTP chunks'}`,
    ['target', 'MB/s', 'CPU s/GB', 'CPU µs/event', 'U+FFFD', 'completed', 'own kernel peak'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.mbPerS.toFixed(0), r.cpuSPerGb?.toFixed(2), r.cpuUsPerEvent?.toFixed(2), r.fffd, `${r.completed}/${r.total}`, fmtB(r.ownSockets?.peak.total)])),
  );
}

module.exports = {
  key: 'S2',
  run: (hn) => runShape(hn, 'S2', hn.P.s2, 'batch'),
  runShape,
};
