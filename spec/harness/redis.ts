import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { trackChild } from './net';

/** A `redis-server` started by a spec on a free 127.0.0.1 port, without persistence. */
export interface RedisProcess {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** True when Debian's `redis-server` is on the PATH. */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Whether specs that need `redis-server` run here: yes when it is installed; in CI (`CI` set) a
 * missing one is a failure (`.ci/run` installs it), elsewhere the specs are skipped with a warning.
 */
export function redisAvailable(): boolean {
  if (hasRedisServer()) return true;
  if (process.env.CI) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
  // eslint-disable-next-line no-console
  console.warn('redis-server is not installed: the Redis resume specs are skipped (apt-get install -y redis-server)');
  return false;
}

/** Starts `redis-server` on a free port (never a system service) and waits until it answers. */
export async function startRedis(): Promise<RedisProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = trackChild(child);
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    const check = (): void => {
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${String(code)}: ${out}`));
    });
  });
  return { url: `redis://127.0.0.1:${port}`, port, stop };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}
