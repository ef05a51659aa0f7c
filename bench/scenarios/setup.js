'use strict';
// SETUP: stream set-up rate. Streams are opened at a steady rate (e.g. 250, 500, 1000 per second)
// for a few seconds; each gets its first event with the upstream's response headers, one more
// event ~200 ms later, and ends. Measures time to first byte and to the first event (p50, p99),
// and the proxy's CPU per stream (set-up, two events, teardown), against "direct" (no proxy):
// all its threads', and its main thread's alone. A Node proxy's requests queue behind its main
// thread (its event loop), so near saturation its TTFB follows the main thread's figure; V8's
// helper threads (parallel GC, the optimizing compiler) add to the first on other cores.
//
// Every round starts each proxy anew, so its rates measure a fresh process: its first few
// thousand streams, while V8 still compiles and optimizes its code (a proxy with more JavaScript
// on the path takes longer to warm). With `warmRatePerS`, each round then opens `warmupStreams`
// more streams unmeasured and runs that rate once more: its row (`warm: true`) is the set-up cost
// of a process that has warmed up, as a long-running gateway's is.
//
// One run's TTFB p99 for the same proxy can differ 4× between back-to-back runs on a shared
// machine, more than the gaps the page compares. So every target (direct too) runs all its rates
// `repeats` times, in rounds over all targets (every other round in reverse order, so drift in the
// machine's speed falls on all targets alike). A rate's row holds the median over the rounds of
// each figure on its own (TTFB p50 and p99, first-event p50 and p99, CPU ms/stream), not one round
// picked by one figure as S2 does: the page compares latency and CPU separately, and each should
// be its own typical value; so one row's figures may come from different rounds. `ttfbP99Runs` and
// `cpuMsPerStreamRuns` keep every round's figure; `max` is the highest of any round; the counts
// (completed, refused, failed, `streamsTotal`) add up over all rounds, while `streams` is one
// round's count.
const procs = require('../lib/procs');
const { table, percentile, sum } = require('../lib/harness');
const { median } = require('../lib/stats');

function stats(values) {
  const a = values.filter((v) => typeof v === 'number').sort((x, y) => x - y);
  return { n: a.length, p50: percentile(a, 0.5), p99: percentile(a, 0.99), max: a.length ? a[a.length - 1] : null };
}

/** One rate's figures over the rounds `xs` (a round that failed is null). */
function mergeRate(xs) {
  const ok = xs.filter(Boolean);
  const pick = (get) => median(ok.map(get));
  const peak = (get) => (ok.some((x) => get(x) != null) ? Math.max(...ok.map(get).filter((v) => v != null)) : null);
  return {
    ratePerS: ok[0].ratePerS,
    ...(ok[0].warm ? { warm: true, warmupStreams: ok[0].warmupStreams } : {}),
    streams: ok[0].streams,
    streamsTotal: sum(ok.map((x) => x.streams)),
    rounds: xs.length,
    wallS: pick((x) => x.wallS),
    ttfbMs: { n: sum(ok.map((x) => x.ttfbMs.n)), p50: pick((x) => x.ttfbMs.p50), p99: pick((x) => x.ttfbMs.p99), max: peak((x) => x.ttfbMs.max) },
    firstEventMs: { n: sum(ok.map((x) => x.firstEventMs.n)), p50: pick((x) => x.firstEventMs.p50), p99: pick((x) => x.firstEventMs.p99), max: peak((x) => x.firstEventMs.max) },
    completed: sum(ok.map((x) => x.completed)),
    refused: sum(ok.map((x) => x.refused)),
    failed: sum(ok.map((x) => x.failed)),
    noFirstEvent: sum(ok.map((x) => x.noFirstEvent)),
    allEnded: ok.length === xs.length && ok.every((x) => x.allEnded),
    cpuS: pick((x) => x.cpuS),
    cpuMsPerStream: pick((x) => x.cpuMsPerStream),
    mainCpuMsPerStream: pick((x) => x.mainCpuMsPerStream),
    ttfbP99Runs: xs.map((x) => (x ? x.ttfbMs.p99 : null)),
    cpuMsPerStreamRuns: xs.map((x) => (x ? x.cpuMsPerStream : null)),
  };
}

/** A target's row from its rounds: per rate, the medians of mergeRate; an error if no round ran. */
function mergeRounds(runs) {
  const ok = runs.filter((r) => !r.error);
  if (!ok.length) return runs[runs.length - 1];
  const stepOf = (x) => `${x.ratePerS}${x.warm ? ' warm' : ''}`;
  const steps = [...new Set(ok.flatMap((r) => r.byRate.map(stepOf)))];
  const byRate = steps.map((step) => mergeRate(runs.map((r) => (r.error ? null : r.byRate.find((x) => stepOf(x) === step) || null))));
  const peakOf = (r) => (r.ownSockets && r.ownSockets.peak ? r.ownSockets.peak.total || 0 : 0);
  const kernel = ok.reduce((a, b) => (peakOf(b) > peakOf(a) ? b : a));
  return { byRate, repeats: runs.length, ownSockets: kernel.ownSockets };
}

/** One round of one target: start it, run every rate once, stop it. */
async function runTarget(hn, t, p, direct) {
  const h = t === direct ? { port: hn.upstream.port, direct: true } : await hn.startTarget(t);
  try {
    const byRate = [];
    const steps = p.ratesPerS.map((rate) => ({ rate, warm: false }));
    if (p.warmRatePerS) steps.push({ rate: p.warmRatePerS, warm: true });
    for (const { rate, warm } of steps) {
      const streams = Math.round((rate * p.openForMs) / 1000);
      if (warm) {
        // Unmeasured streams of the same shape, at the same rate, before the warm step.
        await hn.upCtl('/_config', { rate: 5, eventBytes: p.eventBytes, durationMs: p.streamMs, maxBytes: 1 << 30, ts: false, tickMs: 10, firstEventNow: true });
        await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.warmupStreams, modes: ['fast'], openRatePerS: rate, tagPrefix: `suw${rate}-` } }, 'started', (p.warmupStreams / rate) * 1000 + 30000);
        await hn.waitProgress((x) => x.ended >= x.total, p.streamMs + p.settleMaxMs);
        await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result', 60000);
        await procs.sleep(hn.quick ? 200 : 1000);
      }
      await hn.upCtl('/_config', { rate: 5, eventBytes: p.eventBytes, durationMs: p.streamMs, maxBytes: 1 << 30, ts: false, tickMs: 10, firstEventNow: true });
      const cpu0 = h.direct ? null : h.sampler.read();
      const t0 = Date.now();
      await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: streams, modes: ['fast'], openRatePerS: rate, tagPrefix: `su${rate}-` } }, 'started', p.openForMs + 30000);
      const pr = await hn.waitProgress((x) => x.ended >= x.total, p.streamMs + p.settleMaxMs);
      const wallS = (Date.now() - t0) / 1000;
      const cpu1 = h.direct ? null : h.sampler.read();
      const cpuS = h.direct ? null : cpu1.cpuS - cpu0.cpuS;
      const mainCpuS = h.direct ? null : cpu1.mainCpuS - cpu0.mainCpuS;
      const res = await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result', 60000);
      const ok = res.clients.filter((c) => c.status === 200);
      byRate.push({
        ratePerS: rate,
        ...(warm ? { warm: true, warmupStreams: p.warmupStreams } : {}),
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
        mainCpuMsPerStream: mainCpuS === null ? null : (mainCpuS * 1000) / streams,
      });
      await procs.sleep(hn.quick ? 200 : 1000); // let TIME_WAIT and GC settle between rates
    }
    return { byRate, ownSockets: h.direct ? undefined : hn.ownSockets(h) };
  } finally {
    if (!h.direct) await hn.stopTarget(h);
  }
}

async function run(hn) {
  const { P, results } = hn;
  const p = P.setup;
  const direct = { name: 'direct', label: 'direct to upstream', path: '/sse' };
  const list = [direct, ...hn.activeTargets({ before: true, scenario: 'SETUP' })];
  const repeats = Math.max(1, p.repeats || 1);
  const runs = {};
  for (let round = 0; round < repeats; round++) {
    const order = round % 2 ? [...list].reverse() : list;
    const got = await hn.eachTarget(repeats > 1 ? `SETUP (${round + 1}/${repeats})` : 'SETUP', order, (t) => runTarget(hn, t, p, direct));
    for (const [name, r] of Object.entries(got)) (runs[name] = runs[name] || []).push(r);
  }
  const rows = {};
  for (const t of list) if (runs[t.name]) rows[t.name] = mergeRounds(runs[t.name]);
  results.scenarios.SETUP = rows;
  const every = (vs) => (vs.length > 1 ? vs.map((v) => (v == null ? '–' : v.toFixed(1))).join(' / ') : '');
  const lines = [];
  for (const [n, r] of Object.entries(rows)) {
    if (r.error) lines.push([n, 'ERROR: ' + r.error.slice(0, 60)]);
    else for (const x of r.byRate) lines.push([n, `${x.ratePerS}${x.warm ? ' warm' : ''}`, x.ttfbMs.p50?.toFixed(2), x.ttfbMs.p99?.toFixed(2), x.firstEventMs.p99?.toFixed(2), x.cpuMsPerStream?.toFixed(3) ?? 'n/a', x.mainCpuMsPerStream?.toFixed(3) ?? 'n/a', `${x.completed}/${x.streamsTotal}`, x.refused + x.failed, every(x.ttfbP99Runs)]);
  }
  table(
    `SETUP: streams opened at a steady rate for ${p.openForMs / 1000} s, each ~${p.streamMs} ms long${repeats > 1 ? `, median of ${repeats} runs` : ''}`,
    ['target', 'opened/s', 'TTFB p50 ms', 'TTFB p99 ms', '1st event p99 ms', 'CPU ms/stream', 'main thread ms/stream', 'completed', 'refused+failed', 'TTFB p99 ms, every run'],
    lines,
  );
}

module.exports = { key: 'SETUP', run, median, mergeRounds };
