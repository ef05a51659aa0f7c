'use strict';
// Stability map: producer rate × consumer read rate, per overflow policy; each cell classified.
const procs = require('../lib/procs');
const { DEFAULT_POLICY, cliFlags } = require('../targets');
const { heldPerStream, outcomes } = require('../lib/held');
const { table, countBy, max, mean, fmtB } = require('../lib/harness');

/** Stability map: producer rate × consumer rate per policy; each cell classified. */
async function run(hn) {
  const { P, results } = hn;
  const p = P.map;
  const all = hn.allTargets.filter((t) => !t.before && !t.variant);
  const pass = all.find((t) => t.name === 'tidegate-pass');
  const tg = pass.available().ok ? pass : all.find((t) => t.name === 'tidegate-openai');
  const naive = all.find((t) => t.name === 'naive');
  const flags = cliFlags(tg.cli);
  const policies = [
    { name: 'tidegate pause', target: tg, policy: { overflow: 'pause', stallTimeoutMs: p.stallTimeoutMs } },
    { name: 'tidegate terminate', target: tg, policy: { overflow: 'terminate', stallTimeoutMs: p.stallTimeoutMs } },
    { name: 'naive proxy', target: naive },
  ].filter((x) => {
    if (x.name === 'tidegate terminate' && flags && !flags.has('--overflow')) {
      results.skipped.push({ target: 'map: tidegate terminate', why: 'this gateway build has no --overflow flag yet' });
      return false;
    }
    const a = x.target.available();
    if (!a.ok) results.skipped.push({ target: `map: ${x.name}`, why: a.why });
    return a.ok && (!hn.targetFilter || hn.targetFilter.includes(x.target.name));
  });
  const budget = DEFAULT_POLICY.maxBufferedBytes;
  const out = { producers: p.producers, consumers: p.consumers, streams: p.streams, cellMs: p.cellMs, budgetBytes: budget, policies: {} };
  for (const pol of policies) {
    const cells = [];
    let h;
    try {
      h = await hn.startTarget(pol.target, pol.policy);
      hn.stopSocketWatch(h); // the map reads the queues itself, per cell
      for (const rate of p.producers) {
        for (const cons of p.consumers) {
          await hn.upCtl('/_config', { rate, eventBytes: 150, durationMs: p.cellMs, maxBytes: 1 << 30, ts: false, tickMs: 10 });
          const rss0 = h.sampler.read().rssMb;
          let peak = rss0;
          const tm = setInterval(() => (peak = Math.max(peak, h.sampler.read().rssMb)), 100);
          const mode = cons === 'stalled' ? 'stalled' : cons === 'fast' ? 'fast' : 'slow';
          await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: pol.target.path, clients: p.streams, modes: [mode], slowBps: typeof cons === 'number' ? cons : 0, tagPrefix: `m${rate}-${cons}-` } }, 'started');
          await procs.sleep(p.cellMs + (hn.quick ? 200 : 300));
          await hn.upCtl('/_freeze', {});
          await hn.loadCall({ cmd: 'freeze' }, 'frozen');
          await procs.sleep(hn.quick ? 150 : 250);
          const stats = await hn.upCtl('/_stats');
          const snap = await hn.loadCall({ cmd: 'snapshot' }, 'snapshot');
          clearInterval(tm);
          const held = heldPerStream(stats, snap, h.port, hn.upstream.port);
          if (process.env.BENCH_DEBUG) console.error(JSON.stringify({ cell: [rate, cons], held: held.slice(0, 3), up: stats.streams.slice(0, 3) }));
          const res = await hn.loadCall({ cmd: 'stop', drainMs: hn.quick ? 300 : 800, maxDrainMs: hn.quick ? 900 : 2400 }, 'result');
          const oc = countBy(outcomes(res.clients, held).map((c) => c.outcome));
          // Cut by the proxy: an error event, a reset (tidegate's stall cut), or a close without either.
          const cut = { error: oc.error || 0, reset: oc.reset || 0, closed: oc.closed || 0, unread: oc.unread || 0 };
          const errored = cut.error + cut.reset + cut.closed + cut.unread;
          // Completed means [DONE] arrived within the cell, before the final drain.
          const done = snap.clients.filter((c) => c.sawDone && !c.sawError).length;
          // Userland backlog over the streams still open at the snapshot (see heldPerStream).
          const live = held.filter((x) => x.open);
          const heldMax = live.length ? max(live.map((x) => x.held)) : null;
          const producedMean = mean(held.map((x) => x.produced));
          const nominal = (rate * p.cellMs * stats.eventBytes) / 1000;
          let state;
          if (heldMax > 4 * budget || peak - rss0 > 100) state = 'grew';
          else if (errored > 0) state = 'terminated';
          else if (done === res.clients.length) state = 'completed';
          else state = 'slowed';
          cells.push({ rate, consumer: cons, state, errored, cut, done, n: res.clients.length, open: live.length, heldMaxB: heldMax, rssGrowthMb: peak - rss0, producedRatio: nominal ? producedMean / nominal : null });
          await hn.upCtl('/_config', { rate: 1, durationMs: 1 }); // drop leftover upstream streams
          await procs.sleep(hn.quick ? 80 : 150);
        }
      }
    } catch (e) {
      cells.push({ error: String(e.message || e).slice(0, 300) });
      console.error(`  MAP ${pol.name}: ${e.message}`);
    } finally {
      await hn.stopTarget(h);
    }
    out.policies[pol.name] = cells;
    process.stderr.write(`  MAP ${pol.name} done\n`);
  }
  results.scenarios.MAP = out;
  for (const [name, cells] of Object.entries(out.policies)) {
    const rows = p.producers.map((r) => [
      `${r} ev/s`,
      ...p.consumers.map((c) => {
        const cell = cells.find((x) => x.rate === r && x.consumer === c);
        return cell ? `${cell.state}${cell.state === 'terminated' ? ` ${cutText(cell)}` : cell.state === 'grew' ? ` ${fmtB(cell.heldMaxB || 0)}` : ''}` : '-';
      }),
    ]);
    table(`Stability map: ${name} (${p.streams} streams/cell, ${p.cellMs} ms)`, ['producer \\ consumer', ...p.consumers.map(consumerLabel)], rows);
  }
}

/** "20/20 (reset 20)": streams the proxy cut, and how (error event, reset, close without either). */
function cutText(cell) {
  const c = cell.cut || {};
  const how = [['error ev', c.error], ['reset', c.reset], ['closed', c.closed], ['end unread', c.unread]].filter(([, v]) => v).map(([k, v]) => `${k} ${v}`);
  return `${cell.errored}/${cell.n}${how.length ? ` (${how.join(', ')})` : ''}`;
}

function consumerLabel(c) {
  return c === 'stalled' || c === 'fast' ? c : c >= 1 << 20 ? `${c / 2 ** 20} MiB/s` : `${c / 1024} KiB/s`;
}

module.exports = { key: 'MAP', run };
