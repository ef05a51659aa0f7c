'use strict';
// docs/benchmarks.md from one results object: the run it came from, the method, one table per
// scenario, the targets with their verdicts, a before/after table for --ref runs, and a short
// analysis computed from those tables (it states nothing the tables do not show).
const { cutText, kernelTcpCell, consumerLabel, label, fmtB, f, esc, ok, mdTable } = require('./charts');
const { median } = require('../lib/stats');

/** The run a scenario's figures came from (merge.js may take a scenario from another run). */
function runOf(res, key) {
  const r = (res.scenarioRuns && res.scenarioRuns[key]) || res;
  const b = r.build;
  return {
    date: `${String(r.startedAt).slice(0, 16).replace('T', ' ')} UTC`,
    commit: b ? `\`${b.short}\`${b.dirty ? ' + uncommitted changes' : ''}` : 'unknown commit',
    mode: r.mode,
  };
}

function runLine(res, key) {
  const r = runOf(res, key);
  const before = res.ref && hasBefore(res.scenarios[key]) ? `; "(before)" rows: \`${res.ref.short}\`` : '';
  return `*Run: ${r.date}, commit ${r.commit}, ${r.mode} mode${before}.*`;
}

const hasBefore = (rows) => rows && typeof rows === 'object' && Object.keys(rows).some((n) => n.includes('@before'));
const rowsOf = (S, key) => (S[key] && !S[key].error ? Object.entries(S[key]) : []);
const errCells = (n, r, width) => [label(n), `error: ${esc(r.error).slice(0, 80)}`, ...Array(width - 2).fill('')];
const budgetPeak = (r) => (r && r.streamLog ? Math.max(0, ...Object.values(r.streamLog).map((v) => v.maxPeakBufferedBytes || 0)) : null);
const ratio = (a, b) => (a != null && b ? a / b : null);
const x = (v) => (v == null ? 'n/a' : `${v.toFixed(2)}×`);
/** a ≤ b, or null (not judged) when either is missing. */
const le = (a, b) => (a == null || b == null || !Number.isFinite(a) || !Number.isFinite(b) ? null : a <= b);

/** "stalled 100, ≤ 93.7 s": streams the gateway ended itself (per-stream log), per outcome. */
function gatewayCuts(log) {
  if (!log) return '–';
  const parts = Object.entries(log)
    .filter(([k]) => k !== 'completed' && k !== 'client_closed')
    .map(([k, v]) => `${k} ${v.n}, ≤ ${f(v.maxDurationMs / 1000, 1)} s`);
  return parts.join('; ') || 'none';
}

function header(res, out) {
  const m = res.machine;
  const r = runOf(res, null);
  out.push('# Benchmarks', '');
  out.push('tidegate against other proxies, every system measured side by side on the same machine in one run. A full run (`npm run bench`) rewrites this page and `docs/img/bench-*.svg`.', '');
  const runs = [['this run', r.date, r.commit, r.mode, `\`${res.command}\``, `${f((res.durationS || 0) / 60, 0)} min`]];
  if (res.ref) runs.push(['"(before)" rows', r.date, `\`${res.ref.short}\` (\`--ref ${res.ref.rev}\`)`, r.mode, 'same run, interleaved', '–']);
  for (const [key, sr] of Object.entries(res.scenarioRuns || {})) {
    const o = runOf(res, key);
    runs.push([`${key} (repeated)`, o.date, o.commit, o.mode, `\`${sr.command}\``, `${f((sr.durationS || 0) / 60, 0)} min`]);
  }
  out.push(mdTable(['figures', 'date', 'commit', 'mode', 'command', 'duration'], runs), '');
  const addon = (v) => (v === true ? 'built' : v === false ? '**not built** (kernel queues unbounded)' : 'none in this revision');
  if (res.build && res.build.nativeAddon !== undefined) out.push(`Socket-options addon (\`TCP_NOTSENT_LOWAT\`): ${addon(res.build.nativeAddon)}${res.ref && res.ref.nativeAddon !== undefined ? `; in the "(before)" build: ${addon(res.ref.nativeAddon)}` : ''}.`, '');
  out.push(`Machine: ${m.nproc} × ${m.model}, ${m.memGb} GiB RAM, Linux ${m.kernel}, Node.js ${m.node}, open-file limit ${m.fdHard}; load average ${(m.loadavgStart || []).join(' / ')} at the start, ${(m.loadavgEnd || []).join(' / ')} at the end.`, '');
  if (res.mode === 'quick') out.push('> A quick run: smaller and shorter scenarios that check the harness. Its figures are not comparable with a full run\'s.', '');
  for (const note of res.notes || []) out.push(`> ${note}`, '');
}

/** The systems the method can list, in run order: target name and what it is. */
const SYSTEMS = [
  ['naive', 'Express + node-fetch, `res.write()` of every chunk, its result ignored'],
  ['pipeline', 'Express + `http.request`, `pipeline(upstreamRes, res)`'],
  ['fetch-pipeline', 'Express + Node\'s `fetch`, `pipeline(Readable.fromWeb(body), res)`'],
  ['hpm', 'Express + `createProxyMiddleware`, its defaults'],
  ['nginx', '`proxy_buffering off`, one worker'],
  ['nginx-sndbuf64k', 'the same with `listen … sndbuf=64k`'],
  ['tidegate-pass', 'a passthrough route (`--passthrough /sse=…`)'],
  ['tidegate-openai', '`POST /v1/chat/completions`'],
  ['tidegate-responses', '`POST /v1/responses`'],
];
const baseName = (n) => /^[^~@+]+/.exec(n)[0];

/** The systems with a row in some scenario's table, by target name (variants count as their base). */
function systemsRun(res) {
  const S = res.scenarios;
  const ran = new Set();
  for (const [key, rows] of Object.entries(S)) {
    if (!rows || rows.error || ['MAP', 'MICRO', 'RESUME'].includes(key)) continue;
    for (const n of Object.keys(rows)) ran.add(baseName(n));
  }
  // The stability map names its rows by policy; its tidegate rows run the passthrough route
  // where the build has one, else the OpenAI route (bench/scenarios/map.js).
  const policies = S.MAP && S.MAP.policies ? Object.keys(S.MAP.policies) : [];
  if (policies.includes('naive proxy')) ran.add('naive');
  if (policies.some((p) => p.startsWith('tidegate'))) ran.add(res.skipped.some((s) => s.target === 'tidegate-pass') ? 'tidegate-openai' : 'tidegate-pass');
  return ran;
}

/** `"nginx" and "nginx, sndbuf=64k": nginx not installed …`: the listed systems that did not run, one entry per reason. */
function systemsSkipped(res, ran) {
  const byWhy = new Map();
  for (const s of res.skipped) {
    if (ran.has(s.target) || !SYSTEMS.some(([n]) => n === s.target)) continue;
    byWhy.set(s.why, [...(byWhy.get(s.why) || []), label(s.target)]);
  }
  return [...byWhy].map(([why, names]) => `${names.map((n) => `"${n}"`).join(' and ')}: ${esc(why)}`);
}

function method(res, out) {
  const P = res.params;
  out.push('## Method', '');
  out.push('Every system runs as its own process on 127.0.0.1, beside a fake OpenAI-compatible upstream (`bench/upstream.js`) and a load generator (`bench/load.js`); they share the machine\'s cores, so ratios within a run mean more than absolute figures.', '');
  const ran = systemsRun(res);
  const listed = SYSTEMS.filter(([n]) => ran.has(n));
  if (listed.length) out.push(mdTable(['system', 'what it is'], listed.map(([n, what]) => [label(n), what])), '');
  else out.push('No proxy ran in this run.', '');
  const skipped = systemsSkipped(res, ran);
  if (skipped.length) out.push(`Not run: ${skipped.join('; ')}.`, '');
  out.push('The baselines are in `bench/baselines.js`; every command line is in `bench/targets.js`. tidegate runs as:', '');
  out.push('```sh', `node ${res.gatewayCommand}`, '```', '');
  if (res.gatewayConfig) out.push(`\`bench-config.json\` turns admission limits off (every bench client comes from one address): \`${JSON.stringify(res.gatewayConfig)}\`.`, '');
  out.push(`S1 overrides \`--stall-timeout-ms\` (${P.s1 ? P.s1.stallTimeoutMs : '–'} ms), the stability map too (${P.map ? P.map.stallTimeoutMs : '–'} ms); rows marked "terminate" run with \`--overflow terminate\`.${res.ref ? ` Rows marked "(before)" run the build of \`${res.ref.short}\` (${esc(res.ref.subject)}), in turn with the current one.` : ''}${(res.variants || []).map((v) => ` Rows marked "(${v.label})" ${v.config ? `add \`${JSON.stringify(v.config)}\` to the configuration` : ''}${v.config && v.nodeFlags ? ' and ' : ''}${v.nodeFlags ? `start node with \`${v.nodeFlags.join(' ')}\`` : ''}.`).join('')}`, '');
  const rows = [];
  if (P.s1) rows.push(['S1 slow and stalled', `${P.s1.clients}: half stall after the first event, half read ${P.s1.slowBps} B/s`, `${P.s1.rate.toLocaleString('en')} events/s per stream`, `${P.s1.durationMs / 1000} s + drain`, 'RSS, bytes held per stream, kernel bytes, how streams end']);
  if (P.s2) rows.push(['S2 fast, batched', `${P.s2.clients}, reading as fast as they can`, `${fmtB(P.s2.bytesPerStream)} per stream, many events per HTTP chunk`, 'until done', 'CPU s per GB']);
  if (P.s2chunk) rows.push(['S2 fast, one chunk per event', `${P.s2chunk.clients}, as fast as they can`, `${fmtB(P.s2chunk.bytesPerStream)} per stream, one HTTP chunk per ~170 B event`, 'until done', 'CPU s per GB, µs per event']);
  if (P.s3) rows.push(['S3 latency', `${P.s3.clients}`, `${P.s3.rate} events/s per stream, own 10 ms schedule`, `${P.s3.durationMs / 1000} s after ${P.s3.warmupMs / 1000} s warm-up`, 'latency percentiles']);
  if (P.s4) rows.push(['S4 many streams', `${P.s4.streams.toLocaleString('en')}, opened 200 every 100 ms`, '1 event/s per stream', `${P.s4.holdMs / 1000} s after the last opened`, 'KB per stream']);
  if (P.setup) rows.push(['set-up rate', `${P.setup.ratesPerS.join(' / ')} new streams per s${P.setup.warmRatePerS ? `, then ${P.setup.warmRatePerS} after ${P.setup.warmupStreams} more` : ''}`, `first event with the headers, one more, end (~${P.setup.streamMs} ms)`, `${P.setup.openForMs / 1000} s per rate${P.setup.repeats > 1 ? `, ${P.setup.repeats} runs` : ''}`, 'TTFB, CPU per stream (process, main thread)']);
  if (P.map) rows.push(['stability map', `${P.map.streams} per cell`, `${P.map.producers[0]}–${P.map.producers[P.map.producers.length - 1]} events/s`, `${P.map.cellMs / 1000} s per cell`, 'completed / slowed / terminated / grew']);
  out.push(mdTable(['scenario', 'clients', 'upstream sends', 'duration', 'measures'], rows), '');
  out.push('Definitions:', '');
  out.push(`- **CPU**: user + system time from \`/proc/<pid>/stat\`${ran.has('nginx') || ran.has('nginx-sndbuf64k') ? ' (nginx: master + worker)' : ''}. **RSS**: VmRSS every 100 ms.`);
  out.push('- **held/stream**: payload a proxy read from its upstream socket minus payload it handed to its client socket (userland), in frozen snapshots, over streams whose sockets still exist; "(N open)" is how many that was at the last snapshot (a proxy that cuts stalled streams has only its slow ones left).');
  out.push('- **own kernel bytes**: the queues of the proxy\'s own sockets in `/proc/net/tcp`: send queues towards the clients (local port = its listening port) and receive queues from the upstream (remote port = the upstream\'s); the upstream\'s and the clients\' own queues are not counted. "per stalled stream" is the largest sum of one stream\'s two sockets at a snapshot; "peak" the largest total, sampled every 500 ms.');
  out.push('- **budget use**: the gateway\'s own count, `peakBufferedBytes` in its stream log.');
  out.push('- **How a stream ended** (from the client, after a final drain): *error event*, *reset* (nothing queued arrives), *done*, *closed*, *open*.');
  out.push('- **TTFB**: connect to the first response byte, at the client; **first event**: to the first complete event.');
  out.push('');
  out.push(
    mdTable(
      ['command', 'what it does'],
      [
        ['`npm run bench`', 'full run; rewrites this page'],
        ['`npm run bench -- --ref main~1`', 'adds the "(before)" rows of another revision'],
        ['`npm run bench:quick`', 'small run that checks the harness (< 3 min)'],
        ['`node bench/run.js --only S2CHUNK --targets pipeline,tidegate-pass --no-docs`', 'a subset; page left alone'],
        ['`--variant \'name={"stream":{…}}\'`', 'tidegate rows with another configuration'],
        ['`--variant \'name=node:--flag\'`', 'tidegate rows with other node flags'],
        ['`BENCH_PARAMS=\'{"s2":{"bytesPerStream":41943040}}\'`', 'overrides a scenario\'s parameters'],
        ['`BENCH_GATEWAY_NODE_FLAGS`, `BENCH_BASELINE_NODE_FLAGS`', 'Node flags, e.g. `--cpu-prof`'],
        ['`BENCH_STDOUT_DIR=/tmp/out`', "each process's stdout in a file, e.g. `--trace-gc-nvp` lines"],
        ['`node bench/warmup.js --target tidegate-pass`', 'CPU per stream of a fresh process, window by window, as it warms up'],
      ],
    ),
    '',
  );
  out.push('Raw JSON goes to `bench/results/` (git-ignored).', '');
}

/** [system, target, measured, verdict, met] rows for every check the tables can decide. */
function checks(res) {
  const S = res.scenarios;
  const get = (k, n) => (S[k] && ok(S[k][n]) ? S[k][n] : null);
  const out = [];
  const add = (n, what, measured, met) => out.push({ system: label(n), what, measured, met });
  const pipe = get('S2', 'pipeline');
  const fetchChunk = get('S2chunk', 'fetch-pipeline');
  const nodePeers = ['naive', 'pipeline', 'fetch-pipeline', 'hpm'];
  for (const n of ['tidegate-pass', 'tidegate-openai', 'tidegate-responses']) {
    const s1 = get('S1', n);
    const s1t = get('S1', `${n}+terminate`);
    if (s1) {
      add(n, 'S1 peak RSS − idle ≤ 30 MB', `${f(s1.rssDeltaMb)} MB`, le(s1.rssDeltaMb, 30));
      if (s1.ownKernelPerStalledMaxB != null) add(n, 'S1 own kernel bytes ≤ 256 KiB per stalled stream', fmtB(s1.ownKernelPerStalledMaxB), le(s1.ownKernelPerStalledMaxB, 256 * 1024));
      const bp = budgetPeak(s1);
      if (bp) add(n, 'S1 budget use ≤ 64 KiB per stream', fmtB(bp), le(bp, 65536));
      add(n, 'S1 every stalled stream cut with an error event', `${s1.stalledCutWithError}/${s1.stalledTotal}`, s1.stalledCutWithError === s1.stalledTotal);
      add(n, 'S1 every slow stream completes', `${s1.slowCompleted}/${s1.slowTotal}`, s1.slowCompleted === s1.slowTotal);
    }
    if (s1t) add(`${n}+terminate`, 'S1 every stalled stream cut with an error event', `${s1t.stalledCutWithError}/${s1t.stalledTotal}`, s1t.stalledCutWithError === s1t.stalledTotal);
    const s2 = get('S2', n);
    if (s2 && pipe) {
      const cap = n === 'tidegate-pass' ? 1 : 1.5;
      add(n, `S2 CPU s/GB ≤ ${cap}× http.request + pipeline()`, `${f(s2.cpuSPerGb, 2)} (${x(ratio(s2.cpuSPerGb, pipe.cpuSPerGb))})`, le(s2.cpuSPerGb, cap * pipe.cpuSPerGb));
    }
    if (s2) add(n, 'S2 zero U+FFFD', String(s2.fffd), s2.fffd === 0);
    const c2 = get('S2chunk', n);
    if (c2 && fetchChunk) {
      const cap = n === 'tidegate-pass' ? 1 : 1.3;
      add(n, `S2 per-event chunks: CPU s/GB ≤ ${cap}× fetch + pipeline()`, `${f(c2.cpuSPerGb, 2)} (${x(ratio(c2.cpuSPerGb, fetchChunk.cpuSPerGb))})`, le(c2.cpuSPerGb, cap * fetchChunk.cpuSPerGb));
    }
    const s3 = get('S3', n);
    if (s3) add(n, 'S3 p99 ≤ 2 ms', `${f(s3.p99, 2)} ms`, le(s3.p99, 2));
    const s4 = get('S4', n);
    if (s4) {
      add(n, 'S4 every stream flowing', `${s4.flowing}/${s4.streams}`, s4.flowing >= s4.streams);
      add(n, 'S4 ≤ 34 KB per stream', s4.kbPerStream == null ? 'n/a' : `${f(s4.kbPerStream)} KB`, le(s4.kbPerStream, 34));
    }
    // A warm-up raises the idle RSS the per-stream figure counts from: the cold row is judged too.
    const s4cold = get('S4', `${n}~no warm-up`);
    if (s4cold) add(n, 'S4 ≤ 34 KB per stream, no warm-up', s4cold.kbPerStream == null ? 'n/a' : `${f(s4cold.kbPerStream)} KB`, le(s4cold.kbPerStream, 34));
    const su = get('SETUP', n);
    if (su) {
      // The fresh process's highest rate; the warm step's row is shown in the table, not judged here.
      const at = (r) => r && r.byRate && r.byRate.filter((y) => !y.warm).reduce((b, y) => (!b || y.ratePerS > b.ratePerS ? y : b), null);
      const mine = at(su);
      const peers = nodePeers.map((p) => at(get('SETUP', p))).filter((y) => y && y.ttfbMs.p99 != null && y.ratePerS === mine.ratePerS);
      const best = peers.length ? Math.min(...peers.map((y) => y.ttfbMs.p99)) : null;
      const of = su.repeats > 1 ? `, median of ${su.repeats} runs` : '';
      if (mine && best != null) add(n, `set-up at ${mine.ratePerS}/s${of}: TTFB p99 ≤ best Node peer (${f(best, 1)} ms)`, `${f(mine.ttfbMs.p99, 1)} ms`, le(mine.ttfbMs.p99, best));
    }
  }
  // The Responses route against the chat route (same memory bound, CPU per GB within 10%).
  const rs1 = get('S1', 'tidegate-responses');
  const cs1 = get('S1', 'tidegate-openai');
  // Both routes run under the same per-stream byte budget: the bound holds when both peaks are
  // inside it (a byte either way between two runs is where a frame boundary fell).
  if (rs1 && cs1) add('tidegate-responses', 'S1 budget use within the same 64 KiB bound as the OpenAI route', `${fmtB(budgetPeak(rs1))} vs ${fmtB(budgetPeak(cs1))}`, le(budgetPeak(rs1), 65536) && le(budgetPeak(cs1), 65536));
  for (const k of ['S2', 'S2chunk']) {
    const r = get(k, 'tidegate-responses');
    const c = get(k, 'tidegate-openai');
    if (r && c) add('tidegate-responses', `${k} CPU s/GB within 10% of the OpenAI route`, `${f(r.cpuSPerGb, 2)} vs ${f(c.cpuSPerGb, 2)}`, le(r.cpuSPerGb, 1.1 * c.cpuSPerGb));
  }
  for (const [n, r] of rowsOf(S, 'RESUME')) {
    if (!ok(r)) continue;
    out.push({ system: resumeLabel(n), what: 'resume: no event lost or duplicated', measured: `${r.lost} lost, ${r.duplicated} duplicated, ${r.resumed}/${r.dropped} resumed`, met: r.lost === 0 && r.duplicated === 0 && r.resumed === r.dropped });
  }
  return out;
}

function s1Section(res, out, charts) {
  const S = res.scenarios;
  const p = res.params.s1;
  out.push('### S1 — slow and stalled clients', '', runLine(res, 'S1'), '');
  if (S.S1.error) return out.push(`S1 failed: ${esc(S.S1.error)}`, '');
  out.push(
    mdTable(
      ['system', 'idle RSS', 'peak RSS − idle', 'held/stream (userland)', 'own kernel/stalled stream', 'budget use', 'stalled: error event', 'stalled: reset', 'slow: done', 'gateway ended', 'all TCP memory, peak'],
      rowsOf(S, 'S1').map(([n, r]) =>
        ok(r)
          ? [label(n), `${f(r.idleRssMb)} MB`, `**${f(r.rssDeltaMb)} MB**`, r.heldStreams ? `${fmtB(r.heldPerStreamMaxB)} (${r.heldStreams} open)` : 'n/a', fmtB(r.ownKernelPerStalledMaxB), r.streamLog ? fmtB(budgetPeak(r)) : '–', `${r.stalledCutWithError}/${r.stalledTotal}`, `${r.stalledReset}/${r.stalledTotal}`, `${r.slowCompleted}/${r.slowTotal}`, gatewayCuts(r.streamLog), kernelTcpCell(r.kernelTcp)]
          : errCells(n, r, 11),
      ),
    ),
    '',
  );
  out.push(`- ${p.clients} clients; the upstream writes ${p.rate.toLocaleString('en')} events/s per stream for ${p.durationMs / 1000} s. Under \`pause\` the clients keep their modes until the ${p.stallTimeoutMs / 1000} s stall timeout has passed.`);
  out.push('- "all TCP memory" is every TCP socket on the machine (`/proc/net/sockstat`), against `tcp_mem`\'s pressure threshold.');
  if (rowsOf(S, 'SETUP').some(([n]) => n.endsWith('~no warm-up')) || rowsOf(S, 'S4').some(([n]) => n.endsWith('~no warm-up'))) out.push("- tidegate's idle RSS is measured after the `tidegate` command's warm-up (see Set-up rate): its peak − idle counts from there.");
  out.push('');
  if (charts['bench-s1-rss.svg']) out.push('![S1 RSS over time](img/bench-s1-rss.svg)', '');
}

function kernelSection(res, out) {
  const S = res.scenarios;
  const names = [...new Set(['S1', 'S2', 'S2chunk', 'S4'].flatMap((k) => rowsOf(S, k).map(([n]) => n)))];
  if (!names.length) return;
  const peak = (k, n, part) => {
    const r = S[k] && S[k][n];
    return r && ok(r) && r.ownSockets ? fmtB(r.ownSockets.peak[part]) : '–';
  };
  out.push('### Kernel bytes on each proxy\'s own sockets', '', runLine(res, 'S1'), '');
  out.push('Peaks over each scenario: the proxy\'s send queues towards its clients and receive queues from the upstream, beside its userland RSS above.', '');
  out.push(
    mdTable(
      ['system', 'S1 client send', 'S1 upstream receive', 'S1 per stalled stream', 'S2 total', 'S2 chunk total', 'S4 total'],
      names.map((n) => [label(n), peak('S1', n, 'clientTx'), peak('S1', n, 'upstreamRx'), S.S1 && ok(S.S1[n]) ? fmtB(S.S1[n].ownKernelPerStalledMaxB) : '–', peak('S2', n, 'total'), peak('S2chunk', n, 'total'), peak('S4', n, 'total')]),
    ),
    '',
  );
}

/** Every run's CPU s/GB of a repeated S2 row, in run order. */
const everyRun = (r) => (r.cpuSPerGbRuns && r.cpuSPerGbRuns.length > 1 ? r.cpuSPerGbRuns.map((v) => (v == null ? '–' : f(v, 2))).join(' / ') : '–');

function s2Section(res, out, key, title, base) {
  const S = res.scenarios;
  const b = S[key] && ok(S[key][base]) ? S[key][base] : null;
  out.push(`### ${title}`, '', runLine(res, key), '');
  if (S[key].error) return out.push(`${key} failed: ${esc(S[key].error)}`, '');
  out.push(
    mdTable(
      ['system', 'MB/s', 'CPU s', 'CPU s/GB', `÷ ${label(base)}`, 'CPU µs/event', 'U+FFFD', 'completed', 'CPU s/GB, every run'],
      rowsOf(S, key).map(([n, r]) => (ok(r) ? [label(n), f(r.mbPerS, 0), f(r.cpuS, 2), `**${f(r.cpuSPerGb, 2)}**`, b ? x(ratio(r.cpuSPerGb, b.cpuSPerGb)) : 'n/a', f(r.cpuUsPerEvent, 2), r.fffd, `${r.completed}/${r.total}`, everyRun(r)] : errCells(n, r, 9))),
    ),
    '',
  );
  const repeats = Math.max(0, ...rowsOf(S, key).map(([, r]) => (ok(r) && r.repeats) || 0));
  if (repeats > 1) out.push(`Each system ran ${repeats} times, in rounds over all systems (every other round in reverse order); a row shows the run with the median CPU s/GB; U+FFFD and completed count every run.`, '');
}

function s3Section(res, out, charts) {
  const S = res.scenarios;
  const t = (rows) =>
    mdTable(
      ['system', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p99 after 1st s', 'events', 'completed'],
      Object.entries(rows).map(([n, r]) => (ok(r) ? [label(n), f(r.p50, 2), f(r.p90, 2), `**${f(r.p99, 2)}**`, f(r.max, 1), r.steady ? f(r.steady.p99, 2) : 'n/a', r.n, `${r.completed}/${r.total}`] : errCells(n, r, 8))),
    );
  out.push('### S3 — latency', '', runLine(res, 'S3'), '');
  if (S.S3.error) return out.push(`S3 failed: ${esc(S.S3.error)}`, '');
  out.push('"direct" connects to the upstream without a proxy: the floor of the load generator and the upstream. "p99 after 1st s" leaves out each stream\'s first second, where its set-up falls.', '');
  out.push(t(S.S3), '');
  if (charts['bench-s3-latency.svg']) out.push('![S3 latency](img/bench-s3-latency.svg)', '');
  if (S.S3burst && !S.S3burst.error) out.push('S3 burst: the upstream emits one event on all streams in the same tick, so each system handles them back to back.', '', t(S.S3burst), '');
}

function s4Section(res, out, charts) {
  const S = res.scenarios;
  out.push('### S4 — many idle-ish streams', '', runLine(res, 'S4'), '');
  if (S.S4.error) return out.push(`S4 failed: ${esc(S.S4.error)}`, '');
  out.push('"flowing" = an event in the last 2.5 s and not ended. KB/stream = (RSS − idle RSS) / open streams.', '');
  if (rowsOf(S, 'S4').some(([n]) => n.endsWith('~no warm-up'))) out.push("The tidegate rows' idle RSS is measured after the `tidegate` command's warm-up, whose compiled code and heap pages its streams then reuse, so their KB/stream counts from a higher base; the (no warm-up) rows count from a cold process's idle RSS.", '');
  out.push(mdTable(['system', 'open', 'flowing', 'failed', 'idle RSS', 'RSS', 'KB/stream'], rowsOf(S, 'S4').map(([n, r]) => (ok(r) ? [label(n), r.open, r.flowing, r.failed, r.idleRssMb == null ? '–' : `${f(r.idleRssMb, 0)} MB`, `${f(r.rssMb, 0)} MB`, `**${f(r.kbPerStream)}**`] : errCells(n, r, 7)))), '');
  if (charts['bench-s4-rss.svg']) out.push('![S4 RSS per stream](img/bench-s4-rss.svg)', '');
}

/** A TTFB in ms, short: one decimal under 10 ms, none above. */
const ms = (v) => (v == null ? '–' : f(v, v < 10 ? 1 : 0));

function setupSection(res, out) {
  const S = res.scenarios;
  out.push('### Set-up rate', '', runLine(res, 'SETUP'), '');
  if (S.SETUP.error) return out.push(`SETUP failed: ${esc(S.SETUP.error)}`, '');
  const repeats = Math.max(0, ...rowsOf(S, 'SETUP').map(([, r]) => (ok(r) && r.repeats) || 0));
  if (repeats > 1) out.push(`Median of ${repeats} runs: every system ran each rate ${repeats} times, in rounds over all systems (every other round in reverse order); each figure is its own median, so a row's figures may come from different runs; completed and refused or failed count every run.`, '');
  const warm = rowsOf(S, 'SETUP').flatMap(([, r]) => (ok(r) ? r.byRate : [])).find((y) => y.warm);
  out.push(
    warm
      ? `Each run starts every proxy anew and runs the rates in order, so their rows are a fresh process's first streams, while V8 still compiles and optimizes its code. The "${warm.ratePerS}, warm" row follows ${warm.warmupStreams.toLocaleString('en-US')} more streams at that rate, unmeasured: the set-up cost of a process that has warmed up, as a long-running one's is. The set-up target is judged on the fresh process's ${warm.ratePerS}/s row.`
      : 'Each run starts every proxy anew and runs the rates in order: the rows are a fresh process\'s first streams.',
    '',
  );
  if (rowsOf(S, 'SETUP').some(([n]) => n.endsWith('~no warm-up'))) out.push('The tidegate rows are the `tidegate` command as shipped: before it listens it relays `warmup.streams` streams (default 2,000) through its own routes against upstreams of its own ([gateway.md](gateway.md#warm-up)), and each run waits for it to listen. Its "(no warm-up)" rows run the same build with `warmup.streams: 0`.', '');
  out.push('CPU ms/stream = the proxy\'s CPU over the whole rate step / streams opened (set-up, two events, teardown), all its threads. Main thread ms/stream = the same for its main thread alone: a Node proxy\'s requests queue behind it, so near saturation its TTFB follows this figure.', '');
  // Each run's figure, `–` for a run without one; `–` alone when there was one run or no figure.
  const perRun = (values, fmt) => (values && values.length > 1 && values.some((v) => v != null) ? values.map((v) => (v == null ? '–' : fmt(v))).join(' / ') : '–');
  const every = (y) => perRun(y.ttfbP99Runs, ms);
  const everyCpu = (y) => perRun(y.cpuMsPerStreamRuns, (v) => f(v, 2));
  const rows = [];
  for (const [n, r] of rowsOf(S, 'SETUP')) {
    if (!ok(r)) rows.push(errCells(n, r, 11));
    else for (const y of r.byRate) rows.push([label(n), y.warm ? `${y.ratePerS}, warm` : y.ratePerS, f(y.ttfbMs.p50, 2), `**${f(y.ttfbMs.p99, 1)}**`, every(y), f(y.firstEventMs.p99, 1), y.cpuMsPerStream == null ? '–' : f(y.cpuMsPerStream, 3), everyCpu(y), y.mainCpuMsPerStream == null ? '–' : f(y.mainCpuMsPerStream, 3), `${y.completed}/${y.streamsTotal || y.streams}`, y.refused + y.failed]);
  }
  out.push(mdTable(['system', 'opened/s', 'TTFB p50 ms', 'TTFB p99 ms', 'TTFB p99 ms, every run', 'first event p99 ms', 'CPU ms/stream', 'CPU ms/stream, every run', 'main thread ms/stream', 'completed', 'refused or failed'], rows), '');
  setupTailByCpu(S, out);
}

/**
 * The judged rate's runs of every proxy (not "direct", not the warm rows), in four groups of
 * about the same size by their CPU ms/stream, lowest first: how many runs, their CPU range and
 * their median TTFB p99. Nothing when fewer than eight runs measured both figures.
 */
function setupTailByCpu(S, out) {
  const runs = [];
  let judged = null;
  for (const [n, r] of rowsOf(S, 'SETUP')) {
    if (!ok(r) || n === 'direct') continue;
    const rates = r.byRate.filter((y) => !y.warm).map((y) => y.ratePerS);
    judged = Math.max(judged ?? 0, ...rates);
  }
  for (const [n, r] of rowsOf(S, 'SETUP')) {
    if (!ok(r) || n === 'direct') continue;
    const y = r.byRate.find((x) => !x.warm && x.ratePerS === judged);
    if (!y || !y.cpuMsPerStreamRuns || !y.ttfbP99Runs) continue;
    y.cpuMsPerStreamRuns.forEach((cpu, i) => {
      const p99 = y.ttfbP99Runs[i];
      if (cpu != null && p99 != null) runs.push({ cpu, p99 });
    });
  }
  if (runs.length < 8) return;
  runs.sort((a, b) => a.cpu - b.cpu);
  const rows = [0, 1, 2, 3].map((q) => {
    const part = runs.slice(Math.round((q * runs.length) / 4), Math.round(((q + 1) * runs.length) / 4));
    return [`${f(part[0].cpu, 2)}–${f(part[part.length - 1].cpu, 2)}`, part.length, ms(median(part.map((x) => x.p99)))];
  });
  out.push(`TTFB p99 at ${judged}/s by the run's CPU per stream: every run of every proxy above at that rate (the warm rows left out), in four groups of about the same size by CPU ms/stream. The proxy, the load generator and the upstream share the machine's cores, so a run that costs more CPU per stream leaves less room for the queue of new connections to drain.`, '');
  out.push(mdTable(['CPU ms/stream', 'runs', 'median TTFB p99 ms'], rows), '');
}

function mapSection(res, out, charts) {
  const mp = res.scenarios.MAP;
  out.push('### Stability map', '', runLine(res, 'MAP'), '');
  out.push(`Rows: upstream events/s (~150 B each), scaled above real token rates to fit a ${mp.cellMs / 1000} s cell. Columns: client read rate. "up N%" = bytes the upstream wrote as a share of what it would write unthrottled.`, '');
  if (charts['bench-stability.svg']) out.push('![Stability heatmaps](img/bench-stability.svg)', '');
  for (const [name, cells] of Object.entries(mp.policies)) {
    out.push(`**${name}**`, '');
    out.push(
      mdTable(
        ['producer \\ consumer', ...mp.consumers.map(consumerLabel)],
        mp.producers.map((r) => [
          `${r} ev/s`,
          ...mp.consumers.map((c) => {
            const cell = cells.find((y) => y.rate === r && y.consumer === c);
            if (!cell) return 'n/a';
            const extra = cell.state === 'terminated' ? ` ${cutText(cell)}` : cell.state === 'grew' ? ` ${cell.heldMaxB != null ? fmtB(cell.heldMaxB) : `RSS +${f(cell.rssGrowthMb, 0)} MB`}` : '';
            return `${cell.state}${extra} (up ${f((cell.producedRatio || 0) * 100, 0)}%)`;
          }),
        ]),
      ),
      '',
    );
  }
}

function microSection(res, out) {
  const M = res.scenarios.MICRO;
  out.push('### Micro-benchmarks', '', runLine(res, 'MICRO'), '');
  const fl = M.flow;
  if (fl && fl.flowOpsPerS) {
    out.push(
      mdTable(
        ['chain', 'elements/s'],
        [
          ['`fromIterable → limitRate(256) → onBackpressureBuffer({maxBytes}) → request(64)`', Math.round(fl.flowOpsPerS).toLocaleString('en')],
          ['RxJS `from(array).pipe(map(x => x))`', Math.round(fl.rxOpsPerS).toLocaleString('en')],
          ['Flow time / RxJS time', `**${fl.ratio.toFixed(2)}×**`],
        ],
      ),
      '',
    );
  } else out.push(`Flow micro-benchmark skipped: ${esc((fl && fl.skipped) || 'no result')}`, '');
  const pr = M.parser;
  if (pr && pr.stdout) out.push(`SSE parser against eventsource-parser (\`${pr.file}\`):`, '', '```', pr.stdout, '```', '');
}

/** A RESUME row's name (`tidegate-openai (redis, 2 instances)`) as the page names systems. */
function resumeLabel(name) {
  return name.replace(/^tidegate-openai\b/, label('tidegate-openai')).replace('(redis,', '(Redis store,').replace('(memory,', '(memory store,');
}

function resumeSection(res, out) {
  const R = res.scenarios.RESUME;
  out.push('### Resume', '', runLine(res, 'RESUME'), '');
  if (R.error) return out.push(`RESUME failed: ${esc(R.error)}`, '');
  const p = res.params.resume;
  out.push(`${p.streams} streams on the OpenAI route with \`resume\` on; each client drops after a seeded random number of events (within the first 80% of its stream), and once all have dropped they resume together with \`Last-Event-ID\` (every other one on a second instance when the Redis store runs). Lost and duplicated events are counted against the upstream's numbered events; RSS is taken while every stream is detached.`, '');
  out.push(
    mdTable(
      ['system', 'streams', 'resumed', 'on the other instance', 'events lost', 'events duplicated', 'reconnect → first replayed event p99', 'gateway RSS per detached stream', 'window', 'Redis per stream'],
      rowsOf(res.scenarios, 'RESUME').map(([n, r]) => (ok(r) ? [resumeLabel(n), r.streams, r.resumed, r.otherInstance, `**${r.lost}**`, `**${r.duplicated}**`, `${f(r.replayMs && r.replayMs.p99, 1)} ms`, r.kbPerDetached == null ? 'n/a' : `${f(r.kbPerDetached)} KB`, fmtB(r.windowBytes), r.redisKbPerStream == null ? '–' : `${f(r.redisKbPerStream)} KB`] : errCells(n, r, 10))),
    ),
    '',
  );
}

/** The --ref pairs: each figure of #16's list for the current build and the `@before` one. */
function beforeAfter(res, out) {
  const S = res.scenarios;
  const rows = [];
  const figs = [
    ['S1', 'peak RSS − idle, MB', (r) => r.rssDeltaMb, 1],
    ['S1', 'own kernel/stalled stream, KiB', (r) => (r.ownKernelPerStalledMaxB == null ? null : r.ownKernelPerStalledMaxB / 1024), 1],
    ['S2', 'CPU s/GB', (r) => r.cpuSPerGb, 2],
    ['S2chunk', 'CPU s/GB', (r) => r.cpuSPerGb, 2],
    ['S3', 'p99, ms', (r) => r.p99, 2],
    ['S4', 'KB/stream', (r) => r.kbPerStream, 1],
  ];
  for (const [key, what, get, d] of figs) {
    for (const [n, r] of rowsOf(S, key)) {
      if (n.includes('@before') || n.includes('+') || n.includes('~') || !n.startsWith('tidegate')) continue;
      const b = S[key][`${n}@before`];
      if (!ok(r) || !b || !ok(b)) continue;
      const va = get(r);
      const vb = get(b);
      rows.push([`${key} ${what}`, label(n), f(vb, d), f(va, d), x(ratio(va, vb))]);
    }
  }
  if (!rows.length) return;
  out.push('### Before and after', '', `*Run: ${runOf(res, null).date}, ${res.mode} mode; before = \`${res.ref.short}\`, after = ${runOf(res, null).commit}, interleaved in the same run.*`, '');
  out.push(mdTable(['figure', 'system', 'before', 'after', 'after ÷ before'], rows), '');
}

function analysis(res, out) {
  const list = checks(res);
  out.push('## Analysis', '');
  if (!list.length) return out.push('No tidegate row ran, so no target can be judged from this run.', '');
  const judged = list.filter((c) => c.met !== null);
  const met = judged.filter((c) => c.met);
  const missed = judged.filter((c) => !c.met);
  out.push(`${met.length} of ${judged.length} targets met in this run${res.mode === 'quick' ? ' (quick mode: not comparable)' : ''}.`, '');
  if (missed.length) {
    out.push('Missed:', '');
    for (const c of missed) out.push(`- ${c.system}: ${c.what}: ${c.measured}.`);
    out.push('');
  }
  out.push('Caveats:', '');
  out.push('- The upstream, the load generator and the proxy share the cores: compare ratios within one run.');
  out.push('- Slow clients read through a 512-byte buffer; their own kernel receive queues are the clients\', not the proxy\'s, and are counted in neither "held/stream" nor "own kernel bytes".');
  out.push('- Where S1\'s "all TCP memory" reads **under pressure**, the kernel was past `tcp_mem`\'s pressure threshold and may have dropped segments, slowing every stream of that row whatever the proxy did.');
  out.push('');
}

/** The whole page. `charts` names the SVGs written. */
function markdown(res, charts) {
  const S = res.scenarios;
  const out = [];
  header(res, out);
  method(res, out);
  out.push('## Results', '');
  const list = checks(res);
  if (list.length) {
    out.push('### Targets', '', runLine(res, null), '');
    out.push(mdTable(['system', 'target', 'measured', 'verdict'], list.map((c) => [c.system, c.what, c.measured, c.met === null ? 'not measured' : c.met ? 'met' : '**missed**'])), '');
  }
  if (res.ref) beforeAfter(res, out);
  if (S.S1) s1Section(res, out, charts);
  kernelSection(res, out);
  if (S.S2) s2Section(res, out, 'S2', 'S2 — fast clients, batched chunks', 'pipeline');
  if (S.S2chunk) s2Section(res, out, 'S2chunk', 'S2 — fast clients, one HTTP chunk per event', 'fetch-pipeline');
  if (charts['bench-s2-cpu.svg']) out.push('![S2 CPU per GB](img/bench-s2-cpu.svg)', '');
  if (S.S3) s3Section(res, out, charts);
  if (S.S4) s4Section(res, out, charts);
  if (S.SETUP) setupSection(res, out);
  if (S.MAP && S.MAP.policies) mapSection(res, out, charts);
  if (S.MICRO) microSection(res, out);
  if (S.RESUME && !S.RESUME.skipped) resumeSection(res, out);
  // Systems the method names as skipped are not repeated here.
  const notRun = res.skipped.filter((s) => !SYSTEMS.some(([n]) => n === s.target));
  if (notRun.length) out.push('Not run: ' + notRun.map((s) => `${s.target} (${s.why})`).join('; ') + '.', '');
  analysis(res, out);
  return out.join('\n');
}

module.exports = { markdown, checks };
