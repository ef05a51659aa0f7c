'use strict';
// S1: slow and stalled clients. Half the clients stall after the first event, half read 2 KB/s at
// the TCP level; the upstream produces 10,000 events/s per stream. Measures peak RSS, the bytes a
// proxy holds per stream (userland, bench-side) and in the kernel on its own sockets, and how
// every stream ended.
const procs = require('../lib/procs');
const { KernelTcpWatch } = require('../lib/kernel-tcp');
const { cliFlags } = require('../targets');
const { heldPerStream, outcomes } = require('../lib/held');
const { table, gatewayLogSummary, streamLogStats, countBy, max, mean, fmtB } = require('../lib/harness');

/**
 * S1 runs each tidegate route under both overflow policies: `pause` (the upstream is paused; a
 * stalled socket is cut after stallTimeoutMs) and `terminate` (the 64 KiB budget overflows and
 * the stream ends with an error event at once).
 */
function s1Targets(h) {
  const out = [];
  for (const t of h.activeTargets({ before: true, scenario: 'S1' })) {
    if (!t.tidegate) {
      out.push(t);
      continue;
    }
    out.push({ ...t, policy: { overflow: 'pause' } });
    // `terminate` rows for the current build only: the before/after pairs compare the default.
    if (t.before || t.variant) continue;
    const flags = cliFlags(t.cli);
    if (!flags || flags.has('--overflow')) out.push({ ...t, name: `${t.name}+terminate`, label: `${t.label}, terminate`, policy: { overflow: 'terminate' } });
  }
  return out;
}

/**
 * How long S1 keeps its clients in their modes, ms. The upstream produces for `durationMs`; under
 * `pause` tidegate holds the rest and its stall cut decides, so the clients stay slow or stalled
 * until `stallTimeoutMs` has passed (plus time to fill the socket queues and see the cut). The
 * stall timeout must exceed the longest time a 2 KB/s reader leaves its TCP window closed: on
 * loopback (MSS 64 KiB) the window reopens about once a minute (docs/benchmarks.md), on the
 * Internet (MSS 1448 B) every few seconds.
 */
function s1HoldMs(P, t, policy) {
  const p = P.s1;
  const pausing = t.tidegate && policy.overflow !== 'terminate';
  return pausing ? Math.max(p.durationMs, policy.stallTimeoutMs + p.stallSlackMs) : p.durationMs;
}

async function run(hn) {
  const { P, results } = hn;
  const p = P.s1;
  const list = s1Targets(hn);
  const upstreamPort = hn.upstream.port;
  const rows = await hn.eachTarget('S1', list, async (t) => {
    const policy = { stallTimeoutMs: p.stallTimeoutMs, ...(t.policy || {}) };
    await hn.upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: false, tickMs: 10 });
    const h = await hn.startTarget(t, policy);
    // The kernel's TCP memory over the target's run (its peak against tcp_mem, pressure events).
    const kernel = new KernelTcpWatch();
    const kernelTimer = setInterval(() => kernel.sample(), 500);
    try {
      h.sampler.startSampling();
      await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.clients, modes: ['stalled', 'slow'], slowBps: p.slowBps, tagPrefix: 's1-' } }, 'started');
      // Frozen snapshots at fractions of the run (the last one at its end): a stream tidegate
      // cuts for stalling is gone by the end, so "held" is also taken while streams are open.
      const t0 = Date.now();
      const snaps = [];
      let held = [];
      let stats = null;
      const holdMs = s1HoldMs(P, t, policy);
      // The proxy's own kernel queues per stream (client-side send + upstream-side receive), by mode, max over snapshots.
      const own = { stalled: { max: 0, sum: 0, n: 0 }, slow: { max: 0, sum: 0, n: 0 } };
      for (const frac of p.snapshotsAt) {
        const last = frac >= 1;
        await procs.sleep(Math.max(0, (last ? holdMs + 300 : frac * p.durationMs) - (Date.now() - t0)));
        await hn.upCtl('/_freeze', {});
        await hn.loadCall({ cmd: 'freeze' }, 'frozen');
        await procs.sleep(last ? 400 : 250);
        stats = await hn.upCtl('/_stats');
        const snap = await hn.loadCall({ cmd: 'snapshot' }, 'snapshot');
        held = heldPerStream(stats, snap, h.port, upstreamPort);
        const live = held.filter((x) => x.open);
        for (const x of live) {
          const o = own[x.mode];
          if (!o) continue;
          const b = x.ownDown + x.ownUp;
          o.max = Math.max(o.max, b);
          o.sum += b;
          o.n++;
        }
        // The down-link kernel queue is wire bytes; how much of it is chunk framing shows only when
        // the client reads it (after the drain at the latest): each open client marks that point.
        const ahead = {};
        for (const x of live) ahead[x.tag] = x.kernelDown;
        const { marks } = await hn.loadCall({ cmd: 'mark', ahead }, 'marked');
        snaps.push({ atMs: Date.now() - t0, open: live.length, heldMaxB: live.length ? max(live.map((x) => x.held)) : null, heldMeanB: live.length ? mean(live.map((x) => x.held)) : null, links: countBy(held.map((x) => x.link)), live: live.map((x) => ({ tag: x.tag, inB: x.inB, mark: marks[x.tag] })) });
        if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ atMs: Date.now() - t0, streams: stats.streams.slice(0, 2), clients: snap.clients.slice(0, 2), held: held.slice(0, 4), nheld: held.length }));
        if (!last) {
          await hn.upCtl('/_unfreeze', {});
          await hn.loadCall({ cmd: 'unfreeze' }, 'unfrozen');
        }
      }
      const samples = h.sampler.stopSampling();
      const ownSockets = hn.ownSockets(h);
      const debugUrl = t.tidegate ? `http://127.0.0.1:${h.port}/debug/streams` : undefined;
      const res = await hn.loadCall({ cmd: 'stop', drainMs: p.drainMs, maxDrainMs: p.maxDrainMs, idleMs: p.drainIdleMs, lateMs: p.lateMs, debugUrl, upstreamPort }, 'result', p.maxDrainMs + p.lateMs + 30000);
      clearInterval(kernelTimer);
      // Exact held bytes where the client read past its mark: read from upstream − payload up to
      // the mark (what the client read plus the payload in the down-link kernel queues).
      const clientByTag = new Map(res.clients.map((c) => [c.tag, c]));
      for (const sn of snaps) {
        const exact = [];
        for (const x of sn.live) {
          const payload = x.mark === undefined ? null : clientByTag.get(x.tag)?.marks?.[x.mark];
          if (typeof payload === 'number') exact.push(Math.max(0, x.inB - payload));
        }
        sn.exactStreams = exact.length;
        sn.heldExactMaxB = exact.length ? max(exact) : null;
        sn.heldExactMeanB = exact.length ? mean(exact) : null;
        delete sn.live;
      }
      const best = snaps.filter((x) => x.open > 0).sort((a, b) => (b.heldExactMaxB ?? b.heldMaxB) - (a.heldExactMaxB ?? a.heldMaxB))[0] || null;
      const all = outcomes(res.clients, held);
      const stalled = all.filter((c) => c.mode === 'stalled');
      const slow = all.filter((c) => c.mode === 'slow');
      const n = (list, o) => list.filter((c) => c.outcome === o).length;
      const peak = max(samples.map((s) => s.rssMb));
      return {
        eventBytes: stats.eventBytes,
        idleRssMb: h.idle.rssMb,
        peakRssMb: peak,
        rssDeltaMb: peak - h.idle.rssMb,
        // Largest per-stream userland backlog over the streams open at any snapshot.
        // Exact where every open stream's mark was read (else the framing-ratio estimate).
        heldPerStreamMaxB: best ? (best.exactStreams === best.open ? best.heldExactMaxB : best.heldMaxB) : null,
        heldPerStreamMeanB: best ? (best.exactStreams === best.open ? best.heldExactMeanB : best.heldMeanB) : null,
        heldExact: best ? best.exactStreams === best.open : false,
        heldRatioMaxB: best ? best.heldMaxB : null,
        heldSnapshots: snaps,
        producedPerStreamMeanB: mean(held.map((x) => x.produced)),
        kernelPerStreamMeanB: mean(held.map((x) => x.kernelUp + x.kernelDown)),
        producedPerStreamMaxB: max(held.map((x) => x.produced)),
        nominalPerStreamB: (p.rate * p.durationMs * stats.eventBytes) / 1000,
        stalledCutWithError: n(stalled, 'error'),
        stalledReset: n(stalled, 'reset'),
        stalledClosed: n(stalled, 'closed'),
        stalledUnread: n(stalled, 'unread'),
        stalledDone: n(stalled, 'done'),
        stalledOpen: n(stalled, 'open'),
        stalledEnded: stalled.filter((c) => c.ended).length,
        stalledTotal: stalled.length,
        slowErrored: n(slow, 'error'),
        slowReset: n(slow, 'reset'),
        slowClosed: n(slow, 'closed'),
        slowUnread: n(slow, 'unread'),
        slowCompleted: n(slow, 'done'),
        slowTotal: slow.length,
        slowMeanReceivedB: mean(slow.map((c) => c.payloadBytes)),
        drainedMs: res.drainedMs,
        // The load process's longest gap between two drain samples: a starved bench, not a stalled gateway, when large.
        drainMaxGapMs: res.drainMaxGapMs,
        // Streams still open after the drain: how far they got and how long ago their last event came.
        openAfterDrain: all
          .filter((c) => c.outcome === 'open')
          .slice(0, 10)
          .map((c) => ({ mode: c.mode, rawBytes: c.rawBytes, events: c.events, lastEventMsBeforeDrain: c.lastEventAt ? res.drainStartedAt - c.lastEventAt : null })),
        // Those streams watched for up to lateMs after the drain: how many ended or moved (a pause) and how many did not (a hang).
        openAfterDrainLate: res.late ?? null,
        // The kernel's TCP memory from the target's start to the end of the drain.
        kernelTcp: kernel.result(),
        failed: res.clients.filter((c) => c.failed && !c.status).length,
        stalledErrorCodes: countBy(stalled.filter((c) => c.sawError).map((c) => c.errorCode)),
        policy: t.tidegate ? policy : undefined,
        gatewayLog: gatewayLogSummary(h.rec),
        streamLog: t.tidegate ? streamLogStats(h.rec) : undefined,
        heldStreams: best ? best.open : 0,
        heldAtMs: best ? best.atMs : null,
        linkStates: countBy(held.map((x) => x.link)),
        rssSeries: samples.map((s) => [s.tMs, +s.rssMb.toFixed(1)]),
        // Kernel bytes on the proxy's own sockets: per stream at the snapshots, and the peaks over the run.
        ownKernelPerStalledMaxB: own.stalled.n ? own.stalled.max : null,
        ownKernelPerStalledMeanB: own.stalled.n ? own.stalled.sum / own.stalled.n : null,
        ownKernelPerSlowMaxB: own.slow.n ? own.slow.max : null,
        ownSockets,
      };
    } finally {
      clearInterval(kernelTimer);
      await hn.stopTarget(h);
    }
  });
  results.scenarios.S1 = rows;
  print(P, rows);
}

function print(P, rows) {
  const p = P.s1;
  for (const [name, r] of Object.entries(rows)) {
    const late = r.openAfterDrainLate;
    if (late) {
      console.log(`  ${name}: ${late.open} stream(s) open after the drain (longest gap between drain samples ${r.drainMaxGapMs} ms); in ${late.watchedMs} ms more, ${late.endedLater} ended and ${late.movedLater} moved`);
      for (const [when, g] of [['at the stop', late.gatewayAtStop], ['after the watch', late.gatewayAfterWatch]]) {
        if (g) console.log(`    gateway ${when}: ${g.holders ? `${g.activeStreams} active, ${JSON.stringify(g.holders)}` : JSON.stringify(g)}`);
      }
      if (late.upstreamLinksAtStop) console.log(`    upstream links at the stop: ${JSON.stringify(late.upstreamLinksAtStop)}`);
    }
    const k = r.kernelTcp;
    if (k && k.peakMb !== null) {
      console.log(`  ${name}: kernel TCP memory peak ${k.peakMb.toFixed(0)} MB (pressure at ${k.pressureMb?.toFixed(0)} MB)${k.underPressure ? ', UNDER PRESSURE' : ''}; ${JSON.stringify(k.counters)}`);
    }
  }
  table(
    `S1: ${p.clients} clients (½ stalled, ½ slow at ${p.slowBps} B/s), upstream ${p.rate} events/s/stream, ${p.durationMs / 1000} s`,
    ['target', 'peak-idle RSS', 'held/stream max (open)', 'own kernel/stalled stream max', 'own kernel peak', 'produced/stream', 'stalled: error ev / reset / closed / done', 'slow: error ev / reset / closed / done', 'gateway cut ≤ ms'],
    Object.entries(rows).map(([n, r]) =>
      r.error
        ? [n, 'ERROR: ' + r.error.slice(0, 60)]
        : [
            n,
            `${r.rssDeltaMb.toFixed(1)} MB`,
            r.heldStreams ? `${fmtB(r.heldPerStreamMaxB)} (${r.heldStreams} open @ ${(r.heldAtMs / 1000).toFixed(1)} s)` : 'n/a (0 open)',
            fmtB(r.ownKernelPerStalledMaxB),
            fmtB(r.ownSockets?.peak.total),
            `${fmtB(r.producedPerStreamMeanB)} of ${fmtB(r.nominalPerStreamB)}`,
            `${r.stalledCutWithError} / ${r.stalledReset} / ${r.stalledClosed} / ${r.stalledDone} of ${r.stalledTotal}`,
            `${r.slowErrored} / ${r.slowReset} / ${r.slowClosed} / ${r.slowCompleted} of ${r.slowTotal}`,
            cutSummary(r.streamLog),
          ],
    ),
  );
}

/** "overflow 20 ≤ 35 ms": streams the gateway ended itself, per outcome, with the longest duration. */
function cutSummary(log) {
  if (!log) return '-';
  return (
    Object.entries(log)
      .filter(([k]) => k !== 'completed' && k !== 'client_closed')
      .map(([k, v]) => `${k} ${v.n} ≤ ${Math.round(v.maxDurationMs)}`)
      .join(', ') || 'none'
  );
}

module.exports = { key: 'S1', run };
