'use strict';
// tidegate benchmark harness: `npm run bench` (full, ~50 min on 2 cores) or `npm run bench:quick`
// (3–4 min). Starts a fake upstream, each system under test and a load generator, all on
// 127.0.0.1; runs the scenarios of bench/scenarios/ one after another, each system in turn; prints
// tables, writes bench/results/*.json, docs/img/bench-*.svg and docs/benchmarks.md.
//
// Flags:
//   --quick                 smaller, shorter scenarios (checks the harness; figures not comparable)
//   --only S1,S2,...        scenarios to run: S1 S2 S2CHUNK S3 S4 SETUP MAP MICRO RESUME (default: all)
//   --targets a,b           systems to run (names as in bench/targets.js; `x` also selects
//                           `x@before` and `x~label`)
//   --ref <git-rev>         also build <git-rev> in a temporary git worktree and run its tidegate
//                           targets as `<name>@before`, interleaved with the current build, in
//                           S1, S2, S2chunk, S3, S4 and SETUP (a paired before/after run)
//   --variant label=JSON    also run the tidegate targets as `<name>~label` with this gateway
//                           configuration, e.g. --variant 'lowat0={"stream":{"kernelUnsentBytes":0}}'
//                           (repeatable); `label=node:FLAGS` runs them with these node flags
//                           instead, e.g. --variant 'semi2=node:--max-semi-space-size=2'
//   --no-auto-variants      leave out the variants a full run adds on its own (targets.js autoVariants)
//   --no-docs / --docs      do not / do rewrite docs/benchmarks.md and the SVGs (default: only in
//                           full mode)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const procs = require('./lib/procs');
const { Harness, ROOT } = require('./lib/harness');
const { buildRef, describe, nativeAddon } = require('./lib/ref-build');
const { staleDistFiles } = require('./lib/stale-dist');
const { targets, autoVariants, tidegateCommand, GATEWAY_CLI, BENCH_LIMITS } = require('./targets');
const report = require('./report');

const SCENARIOS = ['s1', 's2', 's2-chunk', 's3', 's4', 'setup', 'map', 'micro', 'resume'].map((f) => require(`./scenarios/${f}`));
// RESUME records itself as skipped when the build has no resumable streams.
const DEFAULT_ONLY = ['S1', 'S2', 'S2CHUNK', 'S3', 'S4', 'SETUP', 'MAP', 'MICRO', 'RESUME'];

const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const flag = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : null);
const flags = (k) => argv.flatMap((a, i) => (a === k && i + 1 < argv.length ? [argv[i + 1]] : []));
const ONLY = flag('--only') ? flag('--only').toUpperCase().split(',') : DEFAULT_ONLY;
const TARGET_FILTER = flag('--targets') ? flag('--targets').split(',') : null;
const REF = flag('--ref');
const AUTO_VARIANTS = !argv.includes('--no-auto-variants');
const VARIANTS = flags('--variant').map((spec) => {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`--variant ${spec}: expected label=JSON or label=node:FLAGS`);
  const value = spec.slice(eq + 1);
  if (value.startsWith('node:')) return { label: spec.slice(0, eq), config: null, nodeFlags: value.slice(5).split(/\s+/).filter(Boolean) };
  return { label: spec.slice(0, eq), config: JSON.parse(value) };
});
// docs/benchmarks.md holds the full figures: a quick run leaves it alone unless --docs is given.
const WRITE_DOCS = argv.includes('--docs') || (!QUICK && !argv.includes('--no-docs'));

const fd = procs.fdLimits();
const S4_MAX = Math.max(100, Math.floor((fd.hard - 300) / 2)); // a proxy holds 2 fds per stream

/** All counts and durations, bounded; quick mode keeps the whole run to a few minutes. */
const P = QUICK
  ? {
      s1: { clients: 20, rate: 20000, eventBytes: 100, durationMs: 2000, slowBps: 2048, stallTimeoutMs: 700, stallSlackMs: 1000, drainMs: 500, maxDrainMs: 1500, drainIdleMs: 1000, lateMs: 1000, snapshotsAt: [0.75, 1] },
      s2: { clients: 10, bytesPerStream: 2 << 20, eventBytes: 150, maxMs: 8000 },
      s2chunk: { clients: 10, bytesPerStream: 512 << 10, eventBytes: 150, maxMs: 8000 },
      s3: { clients: 20, rate: 100, eventBytes: 150, durationMs: 1000, warmupMs: 500 },
      s4: { streams: Math.min(500, S4_MAX), holdMs: 1500, eventBytes: 150 },
      setup: { ratesPerS: [500], openForMs: 500, streamMs: 250, settleMaxMs: 4000, eventBytes: 150, repeats: 1, warmRatePerS: 500, warmupStreams: 500 },
      map: { streams: 10, cellMs: 800, producers: [2000, 50000], consumers: ['stalled', 65536, 'fast'], stallTimeoutMs: 500 },
      micro: { elements: 200000, runs: 3 },
      resume: { streams: 20, rate: 200, eventBytes: 150, durationMs: 2000, awayMs: 100, windowBytes: 1 << 20, lingerMs: 5000, maxMs: 15000 },
    }
  : {
      s1: { clients: 200, rate: 10000, eventBytes: 100, durationMs: 20000, slowBps: 2048, stallTimeoutMs: 90000, stallSlackMs: 10000, drainMs: 3000, maxDrainMs: 120000, drainIdleMs: 30000, lateMs: 15000, snapshotsAt: [0.2, 0.4, 0.6, 1] },
      s2: { clients: 50, bytesPerStream: 20 << 20, eventBytes: 150, maxMs: 60000, repeats: 3 },
      s2chunk: { clients: 50, bytesPerStream: 6 << 20, eventBytes: 150, maxMs: 60000, repeats: 3 },
      s3: { clients: 100, rate: 100, eventBytes: 150, durationMs: 10000, warmupMs: 3000 },
      s4: { streams: Math.min(9000, S4_MAX), holdMs: 10000, eventBytes: 150 },
      setup: { ratesPerS: [250, 500, 1000], openForMs: 2000, streamMs: 250, settleMaxMs: 15000, eventBytes: 150, repeats: 5, warmRatePerS: 1000, warmupStreams: 4000 },
      map: { streams: 20, cellMs: 4000, producers: [500, 2000, 10000, 50000], consumers: ['stalled', 4096, 65536, 1048576, 'fast'], stallTimeoutMs: 1500 },
      micro: { elements: 1000000, runs: 5 },
      resume: { streams: 200, rate: 100, eventBytes: 150, durationMs: 10000, awayMs: 500, windowBytes: 1 << 20, lingerMs: 30000, maxMs: 60000 },
    };

// BENCH_PARAMS='{"s2":{"bytesPerStream":33554432}}' overrides fields (profiling runs).
if (process.env.BENCH_PARAMS) {
  for (const [k, v] of Object.entries(JSON.parse(process.env.BENCH_PARAMS))) P[k] = { ...P[k], ...v };
}

function machineInfo() {
  let model = 'unknown';
  try {
    model = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))[1].trim();
  } catch {
    /* not Linux */
  }
  return { nproc: os.cpus().length, loadavgStart: os.loadavg().map((x) => +x.toFixed(2)), model, node: process.version, memGb: +(os.totalmem() / 2 ** 30).toFixed(1), fdSoft: fd.soft, fdHard: fd.hard, kernel: os.release() };
}

/** `arg` as a POSIX shell reads it back as one word: as it is when plain, else single-quoted. */
function shellWord(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

const results = {
  mode: QUICK ? 'quick' : 'full',
  startedAt: new Date().toISOString(),
  command: ['npm run bench', ...(QUICK ? [':quick'] : [])].join('') + (argv.filter((a) => a !== '--quick').length ? ` -- ${argv.filter((a) => a !== '--quick').map(shellWord).join(' ')}` : ''),
  build: { ...describe(ROOT), nativeAddon: nativeAddon(ROOT) },
  ref: null,
  variants: [...VARIANTS, ...(AUTO_VARIANTS ? autoVariants() : [])],
  machine: machineInfo(),
  params: P,
  gatewayCommand: null,
  skipped: [],
  scenarios: {},
};

/** One line per failed target or scenario, after the tables. */
function printFailures() {
  for (const [k, rows] of Object.entries(results.scenarios)) {
    if (rows && rows.error) console.log(`note: ${k} failed: ${rows.error.slice(0, 200)}`);
    else if (k === 'MAP') {
      for (const [n, cells] of Object.entries(rows.policies || {})) for (const c of cells) if (c.error) console.log(`note: MAP ${n} failed: ${c.error.slice(0, 200)}`);
    } else for (const [n, r] of Object.entries(rows || {})) if (r && r.error) console.log(`note: ${k} ${n} failed: ${r.error.slice(0, 200)}`);
  }
}

let ref = null;
let hn = null;

async function main() {
  procs.installHooks();
  const t0 = Date.now();
  console.log(`tidegate bench (${results.mode}) on ${results.machine.nproc}× ${results.machine.model}, node ${results.machine.node}, fd limit ${fd.soft}/${fd.hard}; build ${results.build ? results.build.short + (results.build.dirty ? ' + uncommitted changes' : '') : 'unknown'}`);
  if (!fs.existsSync(GATEWAY_CLI)) console.log(`note: ${path.relative(ROOT, GATEWAY_CLI)} not found: tidegate runs are skipped`);
  const stale = process.env.BENCH_GATEWAY_CLI ? [] : staleDistFiles(ROOT);
  if (stale.length) throw Object.assign(new Error(`dist/ holds compiled files whose source is gone (${stale.slice(0, 5).join(', ')}); they shadow the current modules. Run: rm -rf dist && npm run build`), { brief: true });
  if (REF) {
    ref = buildRef(ROOT, REF);
    process.on('exit', () => ref && ref.remove()); // also after SIGINT (procs' handler exits)
    results.ref = { rev: ref.rev, commit: ref.commit, short: ref.short, subject: ref.subject, install: ref.install, nativeAddon: ref.nativeAddon, buildS: ref.buildS };
    console.log(`before: ${ref.short} ${ref.subject} (built in ${ref.buildS.toFixed(0)} s, ${ref.install})`);
  }
  const cmd = tidegateCommand({ port: 'PORT', upstreamUrl: 'http://127.0.0.1:UPSTREAM', policy: {} });
  results.gatewayCommand = cmd.args
    .join(' ')
    .replace(ROOT + '/', '')
    .replace(cmd.configFile || '\0', 'bench-config.json');
  results.gatewayConfig = cmd.configFile ? { limits: BENCH_LIMITS } : null;
  hn = new Harness({ P, results, quick: QUICK, targetFilter: TARGET_FILTER, targets: targets({ ref, variants: VARIANTS, autoVariants: AUTO_VARIANTS }) });
  await hn.startUpstream();
  hn.ensureLoad();
  for (const sc of SCENARIOS) {
    if (!ONLY.includes(sc.key)) continue;
    const ts = Date.now();
    try {
      await sc.run(hn);
    } catch (e) {
      console.error(`${sc.key} failed: ${e && e.stack ? e.stack : e}`);
      results.scenarios[sc.key] = { error: String(e && e.message ? e.message : e) };
    }
    process.stderr.write(`${sc.key}: ${((Date.now() - ts) / 1000).toFixed(1)} s\n`);
  }
  results.durationS = (Date.now() - t0) / 1000;
  results.machine.loadavgEnd = os.loadavg().map((x) => +x.toFixed(2));
  for (const s of results.skipped) console.log(`skipped ${s.target}: ${s.why}`);
  // A target that failed to start or run is a note here (and an error row in its table), not a crash.
  printFailures();
  if (results.gatewayFlagsMissing) console.log(`note: the gateway build rejects ${results.gatewayFlagsMissing.join(', ')}; ran without them (its defaults)`);
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:.]/g, '-');
  fs.writeFileSync(path.join(dir, `bench-${results.mode}-${stamp}.json`), JSON.stringify(results, null, 1));
  fs.writeFileSync(path.join(dir, `latest-${results.mode}.json`), JSON.stringify(results, null, 1));
  if (WRITE_DOCS) {
    const written = report.write(results, ROOT);
    console.log(`\nwrote ${written.join(', ')}`);
  } else console.log('\ndocs/benchmarks.md not rewritten (quick mode or --no-docs; --docs forces it)');
  console.log(`\nbench finished in ${results.durationS.toFixed(0)} s; results in bench/results/`);
  if (QUICK) console.log('quick mode checks the harness: its figures are smaller and shorter runs, not comparable; targets are judged only in full mode (npm run bench, docs/benchmarks.md)');
}

main()
  .catch((e) => {
    console.error(e && e.brief ? `bench: ${e.message}` : e && e.stack ? e.stack : e);
    process.exitCode = 1;
  })
  .finally(async () => {
    if (hn && hn.load) hn.load.child.disconnect?.();
    if (hn && hn.load) await procs.stop(hn.load, 500);
    if (hn && hn.upstream) await procs.stop(hn.upstream.rec);
    procs.killAllSync();
    if (ref) ref.remove();
  });
