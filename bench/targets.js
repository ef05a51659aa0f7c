'use strict';
// The systems under test and how to start them. THE GATEWAY COMMAND LINE LIVES HERE
// (tidegateCommand); adapt it here when the CLI changes.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const procs = require('./lib/procs');

const ROOT = path.resolve(__dirname, '..');
// BENCH_GATEWAY_CLI=/path/to/dist/gateway/cli.js benchmarks another build.
const GATEWAY_CLI = process.env.BENCH_GATEWAY_CLI || path.join(ROOT, 'dist/gateway/cli.js');

/** Default tidegate policy; scenarios override fields. */
const DEFAULT_POLICY = { maxBufferedBytes: 65536, stallTimeoutMs: 30000, overflow: 'pause', heartbeatMs: 15000 };

/**
 * Admission limits off: the baselines have none, and every bench client comes from 127.0.0.1
 * (the per-client default of 100 streams would refuse most of S1 and S4).
 */
const BENCH_LIMITS = { maxConnections: 0, maxStreams: 0, maxStreamsPerClient: 0 };

/** Text of a build's file, '' when absent. */
function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The dist/ folder of a build, from its CLI path. */
const distOf = (cli) => path.resolve(path.dirname(cli), '..');

/**
 * Flags the built CLI declares (its parseArgs option names), so the bench runs against an
 * in-progress or older gateway without passing flags it would reject. null = cannot tell, pass all.
 */
function cliFlags(cli = GATEWAY_CLI) {
  const text = readText(cli);
  const set = new Set();
  for (const m of text.matchAll(/['"]?([a-z][a-z-]*)['"]?\s*:\s*\{\s*type\s*:/g)) set.add(`--${m[1]}`);
  return set.size ? set : null;
}

/** Whether a build's gateway serves `route` (a path string in its compiled gateway or providers). */
function buildServes(cli, route) {
  return buildMentions(cli, `'${route}'`);
}

/**
 * Whether a build serves an API on its default routes: its compiled `DEFAULT_APIS` list names it,
 * or (a build without that list) its gateway mentions the route's path.
 */
function servesByDefault(cli, api, route) {
  const m = /DEFAULT_APIS\s*=\s*\[([^\]]*)\]/.exec(readText(path.join(distOf(cli), 'gateway/config/apis.js')));
  return m ? m[1].includes(`'${api}'`) : buildServes(cli, route);
}

/** Whether a .js file of a build's compiled gateway or providers contains `needle`. */
function buildMentions(cli, needle) {
  const dist = distOf(cli);
  const stack = ['gateway', 'providers'].map((d) => path.join(dist, d));
  while (stack.length) {
    const dir = stack.pop();
    let entries = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.name.endsWith('.js') && readText(p).includes(needle)) return true;
    }
  }
  return false;
}

function deepMerge(a, b) {
  const out = { ...a };
  for (const [k, v] of Object.entries(b || {})) out[k] = v && typeof v === 'object' && !Array.isArray(v) && out[k] && typeof out[k] === 'object' ? deepMerge(out[k], v) : v;
  return out;
}

/**
 * The tidegate gateway command line. Serves the OpenAI route (/v1/chat/completions → UPSTREAM_URL,
 * and /v1/responses where the build has it) and a passthrough route (/sse → upstream /sse) from one
 * process. `config` (a gateway configuration object, e.g. `{stream: {kernelUnsentBytes: 0}}`) is
 * written to a JSON file passed with `--config`, merged over the bench's admission limits.
 * Returns {cmd, args, env, unsupported, configFile}.
 */
function tidegateCommand({ cli = GATEWAY_CLI, port, upstreamUrl, policy, config, tmpDir, nodeFlags: variantFlags = [] }) {
  const p = { ...DEFAULT_POLICY, ...(policy || {}) };
  const supported = cliFlags(cli);
  let configFile = null;
  const has = (k) => supported === null || supported.has(k);
  if (has('--config')) {
    const limits = buildMentions(cli, 'maxStreamsPerClient') ? { limits: BENCH_LIMITS } : {};
    const merged = deepMerge(limits, config || {});
    if (Object.keys(merged).length) {
      configFile = path.join(tmpDir || os.tmpdir(), `tidegate-bench-config-${port}.json`);
      if (tmpDir) fs.writeFileSync(configFile, JSON.stringify(merged, null, 1));
    }
  }
  const flags = [
    ['--config', configFile || undefined],
    ['--passthrough', `/sse=${upstreamUrl}/sse`],
    ['--max-buffered-bytes', String(p.maxBufferedBytes)],
    ['--stall-timeout-ms', String(p.stallTimeoutMs)],
    ['--overflow', p.overflow],
    ['--heartbeat-ms', String(p.heartbeatMs)],
    // GET /debug/streams: the bench asks which link holds a stream that did not finish.
    ['--debug-streams', true],
  ];
  // BENCH_GATEWAY_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the gateway process.
  const nodeFlags = (process.env.BENCH_GATEWAY_NODE_FLAGS || '').split(/\s+/).filter(Boolean);
  // The node flags the build's `npm start` uses come first: a variant's or the environment's own
  // value of the same flag comes later and wins.
  const args = [...startNodeFlags(cli), ...variantFlags, ...nodeFlags, cli, '--port', String(port)];
  const unsupported = [];
  for (const [k, v] of flags) {
    if (v === undefined) continue;
    if (has(k)) args.push(k, ...(v === true ? [] : [v]));
    else unsupported.push(k);
  }
  return { cmd: process.execPath, args, unsupported, configFile, env: { PORT: String(port), HOST: '127.0.0.1', UPSTREAM_URL: upstreamUrl, NODE_ENV: 'production' } };
}

/**
 * The node flags the build's `npm start` runs `dist/gateway/cli.js` with (as its Docker image
 * and compose file do). The bench starts `node <cli>` itself, so it passes them on.
 */
function startNodeFlags(cli) {
  let start = '';
  try {
    start = JSON.parse(fs.readFileSync(path.resolve(cli, '../../../package.json'), 'utf8')).scripts.start || '';
  } catch {
    return [];
  }
  const m = /\bnode((?:\s+--\S+)*)\s+dist\/gateway\/cli\.js\b/.exec(start);
  return m ? m[1].split(/\s+/).filter(Boolean) : [];
}

function nginxBinary() {
  // BENCH_NGINX=/path/to/nginx picks a binary; BENCH_NGINX=none runs as if nginx were not installed.
  if (process.env.BENCH_NGINX) return process.env.BENCH_NGINX === 'none' ? null : process.env.BENCH_NGINX;
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx']) {
    if (fs.existsSync(p)) return p;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v nginx']).toString().trim() || null;
  } catch {
    return null;
  }
}

/** nginx.conf for a proxy on `port` to the fake upstream; `listenOpts` e.g. 'sndbuf=64k'. */
function nginxConfig(dir, port, upstreamPort, fdHard, listenOpts = '') {
  const conns = Math.max(1024, fdHard - 100);
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  const user = process.getuid && process.getuid() === 0 ? 'user root root;' : '';
  return `${user}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
worker_rlimit_nofile ${fdHard};
events { worker_connections ${conns}; multi_accept on; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream bench_up { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port} backlog=4096${listenOpts ? ' ' + listenOpts : ''};
    location / {
      proxy_pass http://bench_up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 600s;
      proxy_send_timeout 600s;
      send_timeout 600s;
    }
  }
}
`;
}

function nginxTarget(nginx, name, label, listenOpts) {
  return {
    name,
    label,
    path: '/sse',
    available: () => (nginx ? { ok: true } : { ok: false, why: 'nginx not installed (apt-get install nginx-light)' }),
    start: async (ctx) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bench-nginx-'));
      const up = new URL(ctx.upstreamUrl);
      const conf = path.join(dir, 'nginx.conf');
      fs.writeFileSync(conf, nginxConfig(dir, ctx.port, Number(up.port), procs.fdLimits().hard, listenOpts));
      const rec = procs.start(name, nginx, ['-p', dir, '-c', conf], {});
      await procs.waitForPort(ctx.port, 10000, rec);
      await procs.sleep(200); // let the worker start
      return { rec, port: ctx.port, sampleChildren: true, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
    },
  };
}

function hpmInstalled() {
  try {
    require.resolve('http-proxy-middleware', { paths: [ROOT] });
    return true;
  } catch {
    return false;
  }
}

/**
 * The tidegate targets of one build. `suffix` ('' for the current build, '@before' for --ref,
 * '~label' for a --variant) is appended to each name; `config` is passed to every one of them.
 */
function tidegateTargets({ cli = GATEWAY_CLI, suffix = '', labelSuffix = '', config = null, nodeFlags = [], before = false, variant = null, variantScenarios = null } = {}) {
  const built = () => (fs.existsSync(cli) ? { ok: true } : { ok: false, why: `${path.relative(ROOT, cli)} not built` });
  const mk = (base, label, routePath, extraCheck) => ({
    name: base + suffix,
    baseName: base,
    label: label + labelSuffix,
    path: routePath,
    tidegate: true,
    before,
    variant,
    variantScenarios,
    config,
    cli,
    available: () => {
      const a = built();
      return a.ok && extraCheck ? extraCheck() : a;
    },
    start: (ctx) => startTidegate(base + suffix, { ...ctx, cli, config: ctx.config || config, nodeFlags }),
  });
  return [
    mk('tidegate-pass', 'tidegate passthrough', '/sse', () => {
      const f = cliFlags(cli);
      return f && !f.has('--passthrough') ? { ok: false, why: 'this gateway build has no --passthrough flag' } : { ok: true };
    }),
    mk('tidegate-openai', 'tidegate OpenAI route', '/v1/chat/completions'),
    mk('tidegate-responses', 'tidegate Responses route', '/v1/responses', () => (servesByDefault(cli, 'responses', '/v1/responses') ? { ok: true } : { ok: false, why: 'this gateway build serves no POST /v1/responses by default' })),
  ];
}

/**
 * All targets, in run order. `path` is the request path clients use; `start(ctx)` returns a
 * running handle {rec, port, sampleChildren}; `available()` says whether it can run here (and why
 * not). `opts.ref` ({cli, commit}): the --ref build's tidegate targets, `<name>@before`, each
 * placed right after its current counterpart. `opts.variants` ([{label, config}]): more tidegate
 * targets, `<name>~<label>`, run with that gateway configuration.
 */
function targets(opts = {}) {
  const nginx = nginxBinary();
  const node = (name, label, mode) => ({
    name,
    label,
    path: '/sse',
    available: () => (mode !== 'hpm' || hpmInstalled() ? { ok: true } : { ok: false, why: 'http-proxy-middleware not installed' }),
    start: (ctx) => startNode(name, [path.join(__dirname, 'baselines.js'), '--mode', mode, '--port', String(ctx.port), '--upstream', ctx.upstreamUrl], ctx),
  });
  const list = [
    node('naive', 'naive Express proxy', 'naive'),
    node('pipeline', 'http.request + pipeline() proxy', 'pipeline'),
    node('fetch-pipeline', 'fetch + pipeline() proxy', 'fetch'),
    node('hpm', 'http-proxy-middleware', 'hpm'),
    nginxTarget(nginx, 'nginx', 'nginx', ''),
    nginxTarget(nginx, 'nginx-sndbuf64k', 'nginx, listen sndbuf=64k', 'sndbuf=64k'),
  ];
  const current = tidegateTargets();
  const before = opts.ref ? tidegateTargets({ cli: opts.ref.cli, suffix: '@before', labelSuffix: ' (before)', before: true }) : [];
  const variants = [...(opts.variants || []), ...(opts.autoVariants === false ? [] : autoVariants())].map((v) => ({ ...v, targets: tidegateTargets({ suffix: `~${v.label}`, labelSuffix: ` (${v.label})`, config: v.config, nodeFlags: v.nodeFlags || [], variant: v.label, variantScenarios: v.scenarios || null }) }));
  current.forEach((t, i) => {
    list.push(t);
    if (before[i]) list.push(before[i]);
    for (const v of variants) if (!v.only || v.only.includes(t.name)) list.push(v.targets[i]);
  });
  return list;
}

/**
 * Variants every full run adds: the passthrough route with the kernel's own unsent-queue size
 * (`stream.kernelUnsentBytes: 0`) beside the default, in S1 and S2, once the build has the
 * setting; and both routes with V8's GC on the main thread alone (`node --single-threaded-gc`,
 * docs/gateway.md "V8's GC threads") in S1 and SETUP, the scenarios that choice is about, while
 * `npm start` keeps V8's GC threads (a build whose `npm start` has the flag gets the opposite
 * variant, `--no-single-threaded-gc`, in S1, S2, S2chunk, S4 and SETUP); and the OpenAI route on
 * the event relay (`stream.relay: events`: every event decoded and encoded, as policies and
 * resumable routes run) in S2 and S2chunk, beside its default byte relay; and, once the build
 * warms its routes before it listens (`warmup.streams`, docs/gateway.md "Warm-up"), every route
 * without that warm-up (`warmup.streams: 0`) in SETUP and S4, so the page keeps a fresh process's
 * cold set-up, and memory per stream counted from a cold idle RSS, beside them.
 */
function autoVariants() {
  const list = [];
  if (startNodeFlags(GATEWAY_CLI).includes('--single-threaded-gc')) list.push({ label: 'parallel GC', config: null, nodeFlags: ['--no-single-threaded-gc'], only: ['tidegate-pass', 'tidegate-openai'], scenarios: ['S1', 'S2', 'S2chunk', 'S4', 'SETUP'], auto: true });
  else list.push({ label: 'one GC thread', config: null, nodeFlags: ['--single-threaded-gc'], only: ['tidegate-pass', 'tidegate-openai'], scenarios: ['S1', 'SETUP'], auto: true });
  list.unshift({ label: 'event relay', config: { stream: { relay: 'events' } }, only: ['tidegate-openai'], scenarios: ['S2', 'S2chunk'], auto: true });
  if (buildMentions(GATEWAY_CLI, 'warmUp')) list.push({ label: 'no warm-up', config: { warmup: { streams: 0 } }, only: ['tidegate-pass', 'tidegate-openai', 'tidegate-responses'], scenarios: ['S4', 'SETUP'], auto: true });
  if (buildMentions(GATEWAY_CLI, 'kernelUnsentBytes')) list.unshift({ label: 'kernelUnsentBytes 0', config: { stream: { kernelUnsentBytes: 0 } }, only: ['tidegate-pass'], scenarios: ['S1', 'S2'], auto: true });
  return list;
}

async function startNode(name, args, ctx) {
  // BENCH_BASELINE_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the Node baselines as BENCH_GATEWAY_NODE_FLAGS does the gateway.
  const nodeFlags = (process.env.BENCH_BASELINE_NODE_FLAGS || '').split(/\s+/).filter(Boolean);
  const rec = procs.start(name, process.execPath, [...nodeFlags, ...args], { cwd: ROOT });
  await procs.waitForPort(ctx.port, 10000, rec);
  return { rec, port: ctx.port, sampleChildren: false };
}

async function startTidegate(name, ctx) {
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bench-gw-'));
  const cleanup = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  const c = tidegateCommand({ cli: ctx.cli, port: ctx.port, upstreamUrl: ctx.upstreamUrl, policy: ctx.policy, config: ctx.config, tmpDir, nodeFlags: ctx.nodeFlags });
  const rec = procs.start(name, c.cmd, c.args, { cwd: path.resolve(distOf(ctx.cli || GATEWAY_CLI), '..'), env: c.env });
  try {
    await procs.waitForPort(ctx.port, 15000, rec);
  } catch (e) {
    await procs.stop(rec);
    cleanup();
    throw e;
  }
  return { rec, port: ctx.port, sampleChildren: false, command: [c.cmd, ...c.args].join(' '), unsupported: c.unsupported, cleanup };
}

module.exports = { targets, autoVariants, tidegateCommand, cliFlags, DEFAULT_POLICY, BENCH_LIMITS, GATEWAY_CLI, nginxBinary, buildServes };
