import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { listen } from '../harness/net';

/**
 * Upstreams that answer with a body that never ends, against `node dist/gateway/cli.js` on its
 * defaults (a child process, so its RSS is its own): every whole body the gateway reads has a
 * bound, the upstream request is aborted, and the client gets a typed error.
 */

const CLI = path.join(__dirname, '..', '..', 'dist', 'gateway', 'cli.js');
/** Most RSS growth accepted under one hostile body, bytes. */
const MAX_RSS_GROWTH = 64 * 1024 * 1024;
/** How long the hostile upstream writes at most, ms (the gateway must hang up long before). */
const WRITE_FOR_MS = 8000;
/** Most bytes the hostile upstream writes at most. */
const WRITE_AT_MOST = 2 * 1024 * 1024 * 1024;

interface Endless {
  url: string;
  /** Requests received. */
  requests: number;
  /** Bytes handed to the socket by the last response. */
  written: number;
  /** Resolves when the last response's socket closed, with ms from its first byte. */
  closed: Promise<number>;
  close(): Promise<void>;
}

/** An upstream that answers `status` with `contentType` and writes a body forever (bounded by WRITE_FOR_MS / WRITE_AT_MOST). */
async function endlessUpstream(status: number, contentType: string): Promise<Endless> {
  const chunk = Buffer.alloc(64 * 1024, contentType.includes('json') ? '{"a":"xxxxxxxxxxxx"},' : 'x');
  const state = { requests: 0, written: 0, closed: Promise.resolve(-1) };
  const server = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
    state.requests++;
    state.written = 0;
    req.resume();
    const started = Date.now();
    state.closed = new Promise<number>((resolve) => res.socket?.once('close', () => resolve(Date.now() - started)));
    res.writeHead(status, { 'content-type': contentType });
    if (contentType.includes('json')) res.write('{"data":[');
    const pump = (): void => {
      while (!res.destroyed && Date.now() - started < WRITE_FOR_MS && state.written < WRITE_AT_MOST) {
        state.written += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.destroy();
    };
    pump();
  });
  return {
    url: server.url,
    get requests() {
      return state.requests;
    },
    get written() {
      return state.written;
    },
    get closed() {
      return state.closed;
    },
    close: server.close,
  };
}

interface Gateway {
  child: ChildProcess;
  url: string;
  rss(): number;
  stop(): Promise<void>;
}

async function startGateway(upstreamUrl: string): Promise<Gateway> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bound-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ upstream: { url: upstreamUrl } }));
  const child = spawn(process.execPath, [CLI, '--config', file, '--port', '0', '--host', '127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: '0', UPSTREAM_URL: undefined }, // unset: the config file's URL applies
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${err}`)), 10_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /tidegate listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${String(code)}: ${err}`));
    });
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    rss() {
      const status = fs.readFileSync(`/proc/${child.pid as number}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    async stop() {
      fs.rmSync(dir, { recursive: true, force: true });
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  return { status: res.status, text: await res.text() };
}

const cases: { name: string; status: number; contentType: string; stream: boolean; code: string }[] = [
  { name: '200 text/plain endless, streaming request', status: 200, contentType: 'text/plain', stream: true, code: 'ERR_TIDEGATE_UPSTREAM_NOT_STREAM' },
  { name: '200 application/json endless, streaming request', status: 200, contentType: 'application/json', stream: true, code: 'ERR_TIDEGATE_UPSTREAM_NOT_STREAM' },
  { name: '500 application/json endless, streaming request', status: 500, contentType: 'application/json', stream: true, code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE' },
  { name: '200 application/json endless, non-stream request', status: 200, contentType: 'application/json', stream: false, code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE' },
];

describe('an upstream body that never ends', () => {
  jest.setTimeout(40_000);

  it.each(cases)('$name: typed 502, one upstream request, socket closed, RSS bounded', async ({ status, contentType, stream, code }) => {
    const upstream = await endlessUpstream(status, contentType);
    const gateway = await startGateway(upstream.url);
    try {
      // Warm up (module loading, JIT) on the same path, then measure a fresh request.
      await post(`${gateway.url}/v1/chat/completions`, { model: 'm', stream, messages: [] });
      const before = gateway.rss();
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, gateway.rss())), 25);
      const requestsBefore = upstream.requests;
      let answer: { status: number; text: string };
      let closedAfterMs: number;
      try {
        answer = await post(`${gateway.url}/v1/chat/completions`, { model: 'm', stream, messages: [] });
        closedAfterMs = await Promise.race([upstream.closed, new Promise<number>((_, reject) => setTimeout(() => reject(new Error('upstream socket still open')), 5000).unref())]);
        peak = Math.max(peak, gateway.rss());
      } finally {
        clearInterval(sampler);
      }
      const growth = peak - before;
      process.stdout.write(
        `${status} ${contentType} stream=${String(stream)}: RSS +${(growth / 1048576).toFixed(1)} MB (peak ${(peak / 1048576).toFixed(1)} MB), upstream wrote ${(upstream.written / 1048576).toFixed(1)} MB, socket closed after ${closedAfterMs} ms\n`,
      );
      expect(answer.status).toBe(502);
      expect((JSON.parse(answer.text) as { error: { code: string } }).error.code).toBe(code);
      expect(upstream.requests - requestsBefore).toBe(1);
      expect(closedAfterMs).toBeLessThan(WRITE_FOR_MS);
      expect(growth).toBeLessThanOrEqual(MAX_RSS_GROWTH);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});
