import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parsePrometheus } from '../gateway/helpers';
import { trackChild } from './net';

/** A `tidegate` CLI process (dist/gateway/cli.js) on an ephemeral 127.0.0.1 port. */
export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** JSON log lines printed so far. */
  logs(): Record<string, unknown>[];
  /** Open file descriptors of the process (/proc/<pid>/fd). */
  fdCount(): number;
  /** `tidegate_active_streams` summed over routes. */
  activeStreams(): Promise<number>;
  stop(): Promise<void>;
}

const CLI = path.join(__dirname, '..', '..', 'dist', 'gateway', 'cli.js');

export async function startGatewayProcess(args: string[], timeoutMs = 10_000): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--host', '127.0.0.1', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: '0', UPSTREAM_URL: undefined }, // unset: the embedded simulator
  });
  const stop = trackChild(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${err}`)), timeoutMs);
    const check = (): void => {
      const m = /tidegate listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', check);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${String(code)}: ${err}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    child,
    port,
    url,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    fdCount: () => fs.readdirSync(`/proc/${child.pid as number}/fd`).length,
    async activeStreams() {
      const text = await (await fetch(`${url}/metrics`)).text();
      let sum = 0;
      for (const [k, v] of parsePrometheus(text)) if (k.startsWith('tidegate_active_streams')) sum += v;
      return sum;
    },
    stop,
  };
}
