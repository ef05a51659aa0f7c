'use strict';
// S2: fast clients, unlimited upstream: CPU seconds per GB relayed. Two row sets: `S2` with the
// upstream writing batches of events per res.write() (~64 KiB HTTP chunks), and `S2chunk` with one
// res.write(), so one HTTP chunk, per event, as LLM servers write tokens.
//
// CPU per GB moves ±20 % between single runs on a shared machine, more than the ratios the page
// compares. So every target runs `repeats` times, in rounds over all targets (every other round in
// reverse order, so drift in the machine's speed falls on all targets alike), and its row is the
// run with the median CPU s/GB; `cpuSPerGbRuns` keeps every run's figure. Correctness counts
// (U+FFFD, completed streams) add up over all runs, and the kernel peak is the highest seen.
const { table, streamLogStats, sum, fmtB } = require('../lib/harness');

/** The run whose CPU s/GB is the median of `runs` (the lower middle for an even count). */
function medianRun(runs) {
  const ok = runs.filter((r) => !r.error && r.cpuSPerGb != null);
  if (!ok.length) return runs[runs.length - 1];
  const sorted = [...ok].sort((a, b) => a.cpuSPerGb - b.cpuSPerGb);
  const pick = sorted[Math.floor((sorted.length - 1) / 2)];
  const peakOf = (r) => (r.ownSockets && r.ownSockets.peak ? r.ownSockets.peak.total || 0 : 0);
  const kernel = ok.reduce((a, b) => (peakOf(b) > peakOf(a) ? b : a));
  return {
    ...pick,
    fffd: sum(ok.map((r) => r.fffd)),
    completed: sum(ok.map((r) => r.completed)),
    total: sum(ok.map((r) => r.total)),
    allEnded: ok.every((r) => r.allEnded) && ok.length === runs.length,
    ownSockets: kernel.ownSockets,
    repeats: runs.length,
    cpuSPerGbRuns: runs.map((r) => (r.error ? null : r.cpuSPerGb)),
  };
}

/** Runs S2 in one chunk shape: `chunk` 'batch' (key S2) or 'event' (key S2chunk). */
async function runShape(hn, key, p, chunk) {
  const { results } = hn;
  const list = hn.activeTargets({ before: true, scenario: key });
  const repeats = Math.max(1, p.repeats || 1);
  const runs = {};
  for (let round = 0; round < repeats; round++) {
    const order = round % 2 ? [...list].reverse() : list;
    const got = await runRound(hn, repeats > 1 ? `${key} (${round + 1}/${repeats})` : key, order, p, chunk, key);
    for (const [name, r] of Object.entries(got)) (runs[name] = runs[name] || []).push(r);
  }
  const rows = {};
  for (const t of list) if (runs[t.name]) rows[t.name] = medianRun(runs[t.name]);
  results.scenarios[key] = rows;
  const spread = (r) => (r.cpuSPerGbRuns && r.cpuSPerGbRuns.length > 1 ? r.cpuSPerGbRuns.map((v) => (v == null ? '–' : v.toFixed(2))).join(' / ') : '');
  table(
    `${key}: ${p.clients} fast clients, unlimited upstream, ${fmtB(p.bytesPerStream)} per stream, ${chunk === 'event' ? 'one HTTP chunk per event' : 'batched HTTP chunks'}${repeats > 1 ? `, median of ${repeats} runs` : ''}`,
    ['target', 'MB/s', 'CPU s/GB', 'CPU µs/event', 'U+FFFD', 'completed', 'own kernel peak', 'CPU s/GB, every run'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.mbPerS.toFixed(0), r.cpuSPerGb?.toFixed(2), r.cpuUsPerEvent?.toFixed(2), r.fffd, `${r.completed}/${r.total}`, fmtB(r.ownSockets?.peak.total), spread(r)])),
  );
}

/** One run of every target in `list`, in that order. */
function runRound(hn, label, list, p, chunk, key) {
  return hn.eachTarget(label, list, async (t) => {
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
}

module.exports = {
  key: 'S2',
  run: (hn) => runShape(hn, 'S2', hn.P.s2, 'batch'),
  runShape,
  medianRun,
};
