'use strict';
// The systems under test and how to start them. THE GATEWAY COMMAND LINE LIVES HERE
// (tidegateCommand); adapt it here when the CLI changes.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const procs = require('./lib/procs');

const ROOT = path.resolve(__dirname, '..');
// BENCH_GATEWAY_CLI=/path/to/dist/gateway/cli.js benchmarks another build (before/after comparisons).
const GATEWAY_CLI = process.env.BENCH_GATEWAY_CLI || path.join(ROOT, 'dist/gateway/cli.js');

/** Default tidegate policy; scenarios override fields. */
const DEFAULT_POLICY = { maxBufferedBytes: 65536, stallTimeoutMs: 30000, overflow: 'pause', heartbeatMs: 15000 };

/**
 * The tidegate gateway command line. Serves both the OpenAI route (/v1/chat/completions →
 * UPSTREAM_URL) and a generic passthrough route (/sse → upstream /sse) from one process.
 */
function tidegateCommand({ port, upstreamUrl, policy }) {
  const p = { ...DEFAULT_POLICY, ...(policy || {}) };
  const flags = [
    ['--passthrough', `/sse=${upstreamUrl}/sse`],
    ['--max-buffered-bytes', String(p.maxBufferedBytes)],
    ['--stall-timeout-ms', String(p.stallTimeoutMs)],
    ['--overflow', p.overflow],
    ['--heartbeat-ms', String(p.heartbeatMs)],
    // GET /debug/streams: the bench asks which link holds a stream that did not finish.
    ['--debug-streams'],
  ];
  const supported = cliFlags();
  // BENCH_GATEWAY_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the gateway process.
  const nodeFlags = (process.env.BENCH_GATEWAY_NODE_FLAGS || '').split(/\s+/).filter(Boolean);
  const args = [...nodeFlags, GATEWAY_CLI, '--port', String(port)];
  const unsupported = [];
  for (const [k, v] of flags) {
    if (supported === null || supported.has(k)) args.push(k, ...(v === undefined ? [] : [v]));
    else unsupported.push(k);
  }
  return {
    cmd: process.execPath,
    args,
    unsupported,
    env: { PORT: String(port), HOST: '127.0.0.1', UPSTREAM_URL: upstreamUrl, NODE_ENV: 'production' },
  };
}

/**
 * Flags the built CLI declares (its parseArgs option names), so the bench runs against an
 * in-progress gateway without passing flags it would reject. null = cannot tell, pass all.
 */
function cliFlags() {
  try {
    const text = fs.readFileSync(GATEWAY_CLI, 'utf8');
    const set = new Set();
    for (const m of text.matchAll(/['"]?([a-z][a-z-]*)['"]?\s*:\s*\{\s*type\s*:/g)) set.add(`--${m[1]}`);
    return set.size ? set : null;
  } catch {
    return null;
  }
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

function nginxConfig(dir, port, upstreamPort, fdHard) {
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
    listen 127.0.0.1:${port} backlog=4096;
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

/**
 * All targets. `path` is the request path clients use; `start(ctx)` returns a running handle
 * {rec, port, sampleChildren}. `available()` says whether it can run here (and why not).
 */
function targets() {
  const nginx = nginxBinary();
  return [
    {
      name: 'naive',
      label: 'naive Express proxy',
      path: '/sse',
      available: () => ({ ok: true }),
      start: (ctx) => startNode('naive', [path.join(__dirname, 'baselines.js'), '--mode', 'naive', '--port', String(ctx.port), '--upstream', ctx.upstreamUrl], ctx),
    },
    {
      name: 'pipeline',
      label: 'stream.pipeline() proxy',
      path: '/sse',
      available: () => ({ ok: true }),
      start: (ctx) => startNode('pipeline', [path.join(__dirname, 'baselines.js'), '--mode', 'pipeline', '--port', String(ctx.port), '--upstream', ctx.upstreamUrl], ctx),
    },
    {
      name: 'nginx',
      label: 'nginx proxy_buffering off',
      path: '/sse',
      available: () => (nginx ? { ok: true } : { ok: false, why: 'nginx not installed (apt-get install nginx-light)' }),
      start: async (ctx) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bench-nginx-'));
        const up = new URL(ctx.upstreamUrl);
        const conf = path.join(dir, 'nginx.conf');
        fs.writeFileSync(conf, nginxConfig(dir, ctx.port, Number(up.port), procs.fdLimits().hard));
        const rec = procs.start('nginx', nginx, ['-p', dir, '-c', conf], {});
        await procs.waitForPort(ctx.port, 10000, rec);
        await procs.sleep(200); // let the worker start
        return { rec, port: ctx.port, sampleChildren: true, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
      },
    },
    {
      name: 'tidegate-pass',
      label: 'tidegate passthrough',
      path: '/sse',
      tidegate: true,
      available: () => {
        const a = gatewayAvailable();
        if (!a.ok) return a;
        const f = cliFlags();
        return f && !f.has('--passthrough') ? { ok: false, why: 'this gateway build has no --passthrough flag yet' } : a;
      },
      start: (ctx) => startTidegate('tidegate-pass', ctx),
    },
    {
      name: 'tidegate-openai',
      label: 'tidegate OpenAI adapter',
      path: '/v1/chat/completions',
      tidegate: true,
      available: gatewayAvailable,
      start: (ctx) => startTidegate('tidegate-openai', ctx),
    },
  ];
}

function gatewayAvailable() {
  return fs.existsSync(GATEWAY_CLI) ? { ok: true } : { ok: false, why: `${path.relative(ROOT, GATEWAY_CLI)} not built` };
}

async function startNode(name, args, ctx) {
  // BENCH_BASELINE_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the Node baselines as BENCH_GATEWAY_NODE_FLAGS does the gateway.
  const nodeFlags = (process.env.BENCH_BASELINE_NODE_FLAGS || '').split(/\s+/).filter(Boolean);
  const rec = procs.start(name, process.execPath, [...nodeFlags, ...args], { cwd: ROOT });
  await procs.waitForPort(ctx.port, 10000, rec);
  return { rec, port: ctx.port, sampleChildren: false };
}

async function startTidegate(name, ctx) {
  const c = tidegateCommand({ port: ctx.port, upstreamUrl: ctx.upstreamUrl, policy: ctx.policy });
  const rec = procs.start(name, c.cmd, c.args, { cwd: ROOT, env: c.env });
  await procs.waitForPort(ctx.port, 15000, rec);
  return { rec, port: ctx.port, sampleChildren: false, command: [c.cmd, ...c.args].join(' '), unsupported: c.unsupported };
}

module.exports = { targets, tidegateCommand, cliFlags, DEFAULT_POLICY, GATEWAY_CLI, nginxBinary };
