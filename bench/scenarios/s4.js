'use strict';
// S4: many concurrent 1 event/s streams: RSS per open stream.
const procs = require('../lib/procs');
const { table } = require('../lib/harness');

async function run(hn) {
  const { P, results } = hn;
  const p = P.s4;
  const list = hn.activeTargets({ before: true, scenario: 'S4' });
  const rampBatch = 200;
  const rampDelayMs = 100;
  const rampMs = Math.ceil(p.streams / rampBatch) * rampDelayMs;
  const rows = await hn.eachTarget('S4', list, async (t) => {
    await hn.upCtl('/_config', { rate: 1, eventBytes: p.eventBytes, durationMs: rampMs + p.holdMs + 20000, maxBytes: 1 << 30, ts: false, tickMs: 50 });
    const h = await hn.startTarget(t);
    try {
      h.sampler.startSampling();
      const t0 = Date.now();
      await hn.loadCall({ cmd: 'start', spec: { port: h.port, path: t.path, clients: p.streams, modes: ['fast'], rampBatch, rampDelayMs, tagPrefix: 's4-' } }, 'started', 120000);
      const wait = Math.max(0, rampMs + p.holdMs - (Date.now() - t0));
      await procs.sleep(wait);
      const pr = await hn.loadCall({ cmd: 'progress', flowWindowMs: 2500 }, 'progress');
      const now = h.sampler.read();
      h.sampler.stopSampling();
      const ownSockets = hn.ownSockets(h);
      await hn.loadCall({ cmd: 'stop', drainMs: 0 }, 'result', 60000);
      const deltaKb = (now.rssMb - h.idle.rssMb) * 1024;
      return {
        streams: p.streams,
        open: pr.open,
        flowing: pr.flowing,
        failed: pr.failed,
        errors: pr.errors,
        rssMb: now.rssMb,
        idleRssMb: h.idle.rssMb,
        kbPerStream: pr.open > 0 ? deltaKb / pr.open : null,
        holdS: (Date.now() - t0) / 1000,
        ownSockets,
      };
    } finally {
      await hn.stopTarget(h);
      await procs.sleep(hn.quick ? 200 : 500);
    }
  });
  results.scenarios.S4 = rows;
  table(
    `S4: ${p.streams} concurrent 1 event/s streams (fd hard limit ${hn.results.machine.fdHard}), checked after ${p.holdMs / 1000} s`,
    ['target', 'open', 'flowing', 'failed', 'RSS', 'KB/stream'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.open, r.flowing, r.failed, `${r.rssMb.toFixed(0)} MB`, r.kbPerStream?.toFixed(1)])),
  );
}

module.exports = { key: 'S4', run };
