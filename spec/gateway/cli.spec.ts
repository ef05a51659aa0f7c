import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createGatewayApp } from '../../src/gateway/app';
import { parseConfig } from '../../src/gateway/config';
import { ENV_OVERRIDES } from '../../src/gateway/config/env';
import { createLogger } from '../../src/gateway/logger';
import { createSimulator, type Simulator } from '../../src/simulator';
import { listen } from '../harness/net';

const CLI = path.join(__dirname, '../../dist/gateway/cli.js');

interface Cli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function run(args: string[], env: Record<string, string | undefined> = {}): Cli {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

async function listening(cli: Cli): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const m = /listening on (http:\/\/\S+)/.exec(cli.stdout());
    if (m) return m[1];
    if (Date.now() > deadline || cli.child.exitCode !== null) throw new Error(`no listening line: ${cli.stdout()} ${cli.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('tidegate CLI: --help', () => {
  it('names every environment variable the gateway reads', async () => {
    const cli = run(['--help']);
    expect(await cli.exit).toBe(0);
    for (const name of [...Object.keys(ENV_OVERRIDES), 'TIDEGATE_CONFIG', 'LOG_LEVEL', 'TIDEGATE_SOCKET_OPTIONS']) expect(cli.stdout()).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it("names each environment variable once: on its flag's line or in the environment section", async () => {
    const cli = run(['--help']);
    expect(await cli.exit).toBe(0);
    const names = [...Object.keys(ENV_OVERRIDES), 'TIDEGATE_CONFIG', 'LOG_LEVEL', 'TIDEGATE_SOCKET_OPTIONS'];
    const counts = Object.fromEntries(names.map((name) => [name, cli.stdout().match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0]));
    expect(counts).toEqual(Object.fromEntries(names.map((name) => [name, 1])));
  });
});

describe('tidegate CLI: graceful shutdown', () => {
  it('on SIGTERM lets a short stream complete, ends a long one with ERR_TIDEGATE_SHUTDOWN at the deadline, and exits 0', async () => {
    const cli = run(['--shutdown-grace-ms', '1500', '--heartbeat-ms', '200'], { LOG_LEVEL: 'info' });
    children.push(cli.child);
    const url = await listening(cli);
    const open = (model: string): Promise<string> =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, stream: true, messages: [] }),
      }).then((r) => r.text());
    const short = open('sim-basic'); // ~0.9 s at the embedded simulator's pace
    const long = open('sim-long'); // ~17 s
    await new Promise((r) => setTimeout(r, 200));
    cli.child.kill('SIGTERM');
    const [shortText, longText] = await Promise.all([short, long]);
    expect(shortText.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const last = longText.trimEnd().split('\n\n').at(-1) as string;
    expect(JSON.parse(last.replace(/^data: /, ''))).toMatchObject({ error: { code: 'ERR_TIDEGATE_SHUTDOWN' } });
    expect(await cli.exit).toBe(0);
    const lines = cli
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.message === 'stream');
    expect(lines.map((l) => [l.outcome, l.errorCode ?? null]).sort()).toEqual([
      ['completed', null],
      ['shutdown', 'ERR_TIDEGATE_SHUTDOWN'],
    ]);
  });

  it('takes two SIGINTs a few ms apart (a terminal and npm both signalling) as one: the stream ends with [DONE] and exit is 0', async () => {
    const cli = run([], { LOG_LEVEL: 'info' });
    children.push(cli.child);
    const url = await listening(cli);
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [] }), // ~0.9 s
    });
    const text = res.text();
    cli.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 5));
    cli.child.kill('SIGINT');
    expect((await text).trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await cli.exit).toBe(0);
    expect(cli.stdout()).toContain('shutdown already requested');
  });

  it('exits 1 at once on a second signal more than a second after the first, with a stream still open', async () => {
    const cli = run([], { LOG_LEVEL: 'info' });
    children.push(cli.child);
    const url = await listening(cli);
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-long', stream: true, messages: [] }), // ~17 s, past the 10 s grace
    });
    const text = res.text().catch(() => 'cut');
    cli.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 1300));
    expect(cli.child.exitCode).toBeNull(); // still draining
    const before = Date.now();
    cli.child.kill('SIGINT');
    expect(await cli.exit).toBe(1);
    expect(Date.now() - before).toBeLessThan(2000);
    expect(await text).not.toContain('data: [DONE]');
  });

  it('exits 0 at once on SIGTERM when idle', async () => {
    const cli = run([]);
    children.push(cli.child);
    await listening(cli);
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });
});

describe('tidegate CLI: startup line', () => {
  /** The plain-text line the CLI prints once it listens. */
  async function startupLine(cli: Cli): Promise<string> {
    await listening(cli);
    // The whole line, its newline included: a pipe may hand it over in more than one read.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const m = /^(tidegate listening on [^\n]*)\n/m.exec(cli.stdout());
      if (m) return m[1] as string;
      if (Date.now() > deadline) throw new Error(`no whole startup line: ${cli.stdout()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it("is the line README's quick start says it prints, on the port it listens on", async () => {
    const readme = readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
    const quoted = /Once it prints\s+`([^`]+)`/.exec(readme)?.[1];
    expect(quoted).toBe('tidegate listening on http://127.0.0.1:8080 (upstream: embedded simulator)');
    const cli = run([]);
    children.push(cli.child);
    const line = await startupLine(cli);
    const port = /:(\d+) /.exec(line)?.[1];
    expect(line).toBe((quoted as string).replace(':8080', `:${port}`));
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });

  it('names a configured upstream without its userinfo or credential query values', async () => {
    const cli = run(['--upstream', 'http://user-x:pass-x@127.0.0.1:9/v1?key=secret-x&mode=loop']);
    children.push(cli.child);
    const line = await startupLine(cli);
    expect(line).toMatch(/^tidegate listening on http:\/\/127\.0\.0\.1:\d+ \(upstream: http:\/\/\[redacted\]@127\.0\.0\.1:9\/v1\?key=\[redacted\]&mode=loop\)$/);
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });

  it('prints a configured upstream as given, without the trailing slash URL parsing adds', async () => {
    const cli = run(['--upstream', 'http://127.0.0.1:9']);
    children.push(cli.child);
    const line = await startupLine(cli);
    expect(line).toMatch(/^tidegate listening on http:\/\/127\.0\.0\.1:\d+ \(upstream: http:\/\/127\.0\.0\.1:9\)$/);
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });
});

describe('tidegate CLI: warm-up', () => {
  /** The whole JSON log lines printed so far (the last piece, not ended by a newline yet, left out). */
  const jsonLines = (cli: Cli): Array<Record<string, unknown>> =>
    cli
      .stdout()
      .split('\n')
      .slice(0, -1)
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('relays 2000 streams through the default routes before the listening line, by default', async () => {
    const cli = run([], { TIDEGATE_WARMUP_STREAMS: undefined });
    children.push(cli.child);
    await listening(cli);
    // JSON lines leave in batches: wait for the one logged last.
    for (const deadline = Date.now() + 5000; !jsonLines(cli).some((l) => l.message === 'gateway listening') && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    const lines = jsonLines(cli);
    const done = lines.findIndex((l) => l.message === 'warm-up done');
    expect(lines.findIndex((l) => l.message === 'warming up')).toBeLessThan(done);
    expect(lines[done]).toMatchObject({ streams: 2000, failed: 0, routes: ['/v1/chat/completions', '/v1/responses', '/v1/completions', '/v1/messages'] });
    expect(done).toBeLessThan(lines.findIndex((l) => l.message === 'gateway listening'));
    expect(lines.filter((l) => l.message === 'stream')).toEqual([]);
    // Printed in the order logged: the plain listening line after the JSON lines before it.
    expect(cli.stdout().indexOf('"gateway listening"')).toBeLessThan(cli.stdout().indexOf('tidegate listening on'));
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });

  it('fails on a port in use at once, before warming up', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const cli = run(['--host', '127.0.0.1', '--port', String((busy.address() as net.AddressInfo).port)], { TIDEGATE_WARMUP_STREAMS: undefined });
      children.push(cli.child);
      expect(await cli.exit).toBe(1);
      expect(cli.stderr()).toMatch(/address already in use/);
      expect(cli.stdout()).not.toMatch(/warming up|warm-up done/);
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });

  it('exits 0 with one line on SIGTERM during the warm-up', async () => {
    const cli = run(['--warmup-streams', '100000'], { TIDEGATE_WARMUP_STREAMS: undefined });
    children.push(cli.child);
    for (const deadline = Date.now() + 10_000; !jsonLines(cli).some((l) => l.message === 'warming up'); ) {
      if (Date.now() > deadline || cli.child.exitCode !== null) throw new Error(`no warming up line: ${cli.stdout()} ${cli.stderr()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
    expect(jsonLines(cli).filter((l) => String(l.message).startsWith('shutdown'))).toEqual([expect.objectContaining({ message: 'shutdown requested before listening', signal: 'SIGTERM' })]);
    expect(cli.stdout()).not.toMatch(/listening on/);
  });

  // The signal arrives as express is required: before main() runs, with nothing of the gateway set up.
  it.each([
    ['during the warm-up', '100000', 'shutdown requested before listening'],
    ['once it listens (no warm-up: nothing waits for the event loop before)', '0', 'shutdown requested'],
  ])('exits 0 after a SIGTERM that arrived while its modules loaded, handled %s', async (_when, warmupStreams, message) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tidegate-cli-signal-'));
    const preload = path.join(dir, 'signal-on-express.js');
    writeFileSync(
      preload,
      "const Module = require('node:module'); const load = Module._load; let sent = false;\n" +
        "Module._load = function (request, ...rest) { if (request === 'express' && !sent) { sent = true; process.kill(process.pid, 'SIGTERM'); } return load.call(this, request, ...rest); };\n",
    );
    try {
      const cli = run(['--warmup-streams', warmupStreams], { NODE_OPTIONS: `--require ${preload}`, TIDEGATE_WARMUP_STREAMS: undefined });
      children.push(cli.child);
      const timer = setTimeout(() => cli.child.kill('SIGKILL'), 15_000); // a lost signal: the gateway would run on
      expect(await cli.exit).toBe(0);
      clearTimeout(timer);
      expect(jsonLines(cli).filter((l) => String(l.message).startsWith('shutdown'))).toEqual([expect.objectContaining({ message, signal: 'SIGTERM' })]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skips it with --warmup-streams 0', async () => {
    const cli = run(['--warmup-streams', '0'], { TIDEGATE_WARMUP_STREAMS: undefined });
    children.push(cli.child);
    await listening(cli);
    expect(jsonLines(cli).filter((l) => l.message === 'warm-up done')).toEqual([]);
    cli.child.kill('SIGTERM');
    expect(await cli.exit).toBe(0);
  });
});

describe('tidegate CLI: configuration', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tidegate-cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('rejects a bad config file with exit 1 and a message naming the field', async () => {
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'stream:\n  maxBufferedBytes: lots\n');
    const cli = run(['--config', file]);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toContain('stream.maxBufferedBytes');
    expect(cli.stderr()).toContain(file);
  });

  it('names an unknown key in a route', async () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ routes: [{ path: '/x', provider: 'passthrough', url: 'http://127.0.0.1:9/x', overflw: 'pause' }] }));
    const cli = run(['--config', file]);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toMatch(/routes\.0\.overflw/);
  });

  it('rejects a bad flag value naming the field', async () => {
    const cli = run(['--overflow', 'explode']);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toContain('stream.overflow');
  });

  it('refuses a number flag spelt other than in decimal, naming the flag', async () => {
    const cli = run(['--port', '0', '--warmup-streams', '0x10']);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr().trim()).toBe('tidegate: invalid --warmup-streams: expected a decimal number, got "0x10"');
  });

  it("names a number flag's value as typed when the schema refuses it, not as converted", async () => {
    const cli = run(['--port', '1e20', '--warmup-streams', '0']);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr()).toContain('(from --port 1e20)');
    expect(cli.stderr()).not.toContain('100000000000000000000');
  });

  it('neither keeps nor announces the embedded simulator when the gateway cannot start', async () => {
    const file = path.join(dir, 'redis.yaml');
    writeFileSync(file, 'routes:\n  - path: /v1/chat/completions\n    provider: openai\n    resume: { store: redis }\n');
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      for (const args of [['--config', file], ['--port', String((busy.address() as net.AddressInfo).port)]]) {
        const cli = run(args, { LOG_LEVEL: 'info', REDIS_URL: '', UPSTREAM_URL: undefined });
        children.push(cli.child);
        expect(await cli.exit).toBe(1);
        expect(cli.stderr()).toMatch(/^tidegate: (routes .*redis\.url|cannot listen on)/);
        expect(cli.stdout()).not.toContain('simulator started');
      }
    } finally {
      busy.close();
    }
  });

  it('says in one line which address is busy when the port is taken', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const cli = run(['--port', String(port)]);
      children.push(cli.child);
      expect(await cli.exit).toBe(1);
      expect(cli.stderr().trim()).toBe(`tidegate: cannot listen on 127.0.0.1:${port}: address already in use (choose another with --port / PORT or --host / HOST)`);
    } finally {
      busy.close();
    }
  });

  it('says in one line that a --host does not resolve', async () => {
    const cli = run(['--port', '0', '--host', 'nohost.invalid']);
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr().trim()).toMatch(/^tidegate: cannot listen on "nohost\.invalid": no such host \((ENOTFOUND|EAI_AGAIN); choose another with --host \/ HOST\)$/);
  });

  it.each(['INFO', 'bogus'])('refuses LOG_LEVEL=%s, which would log nothing, naming the levels', async (level) => {
    const cli = run(['--port', '0'], { LOG_LEVEL: level });
    children.push(cli.child);
    expect(await cli.exit).toBe(1);
    expect(cli.stderr().trim()).toBe(`tidegate: invalid log level "${level}" (from LOG_LEVEL): expected one of error, warn, info, http, verbose, debug, silly`);
  });

  it('serves --passthrough /path=URL for GET from a config-less start', async () => {
    const sim = createSimulator({ tokensPerSecond: 1000, ttftMs: 1 });
    const { url: simUrl } = await sim.listen(0, '127.0.0.1');
    try {
      const cli = run(['--passthrough', `/events=${simUrl}/v1/chat/completions`], { UPSTREAM_URL: simUrl });
      children.push(cli.child);
      const url = await listening(cli);
      // The simulator streams only on POST; a GET must still reach it (with its query string).
      const seen: string[] = [];
      sim.server.once('request', (req) => seen.push(`${req.method} ${req.url}`));
      await (await fetch(`${url}/events?topic=a`)).text();
      expect(seen).toEqual(['GET /v1/chat/completions?topic=a']);
      const post = await fetch(`${url}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [] }),
      });
      expect(post.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect((await post.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
      cli.child.kill('SIGTERM');
      expect(await cli.exit).toBe(0);
    } finally {
      await sim.close();
    }
  });
});

describe('tidegate CLI: --debug-streams', () => {
  it('serves GET /debug/streams only with the flag', async () => {
    for (const [args, status] of [[[], 404], [['--debug-streams'], 200]] as const) {
      const cli = run([...args]);
      children.push(cli.child);
      const url = await listening(cli);
      const res = await fetch(`${url}/debug/streams`);
      expect(res.status).toBe(status);
      if (status === 200) expect(await res.json()).toEqual({ activeStreams: 0, streams: [] });
      cli.child.kill('SIGTERM');
      expect(await cli.exit).toBe(0);
    }
  });
});

describe('gateway readiness while draining', () => {
  let sim: Simulator;
  afterEach(() => sim.close());

  it('answers /readyz 503 and refuses new streams once draining started', async () => {
    sim = createSimulator({ tokensPerSecond: 1000, ttftMs: 1 });
    const { url } = await sim.listen(0, '127.0.0.1');
    const app = createGatewayApp(parseConfig({ upstream: { url } }), { logger: createLogger({ silent: true }) });
    const server = await listen(app);
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      await app.gateway.drain(100);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim', stream: true, messages: [] }),
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_SHUTDOWN' } });
    } finally {
      await server.close();
    }
  });
});
