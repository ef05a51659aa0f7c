import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RawClient, sleep, waitFor } from '../harness/net';

const CLIENTS = 200;
const MAX_BUFFERED_BYTES = 64 * 1024;

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

describe('200 concurrent stalled clients against one gateway process', () => {
  let child: ChildProcess;
  let port = 0;
  const clients: RawClient[] = [];

  beforeAll(async () => {
    child = spawn(process.execPath, ['--expose-gc', path.join(__dirname, '../harness/fleet-gateway.js')], {
      env: { ...process.env, MAX_BUFFERED_BYTES: String(MAX_BUFFERED_BYTES) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    port = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('fleet gateway did not start')), 10_000);
      child.stdout!.on('data', (d: Buffer) => {
        const m = /ready (\d+)/.exec(d.toString());
        if (m) {
          clearTimeout(t);
          resolve(Number(m[1]));
        }
      });
    });
  });

  afterAll(async () => {
    for (const c of clients) c.destroy();
    child.kill('SIGKILL');
  });

  const stats = async (): Promise<{ streams: number; held: number; maxPeak: number; produced: number }> =>
    (await fetch(`http://127.0.0.1:${port}/stats`)).json() as never;

  it('keeps RSS growth within C × maxBufferedBytes plus a fixed overhead', async () => {
    // Warm up: one full stream read to the end, so JIT and pools are in place before the baseline.
    const warm = await RawClient.request(port, '/s');
    warm.readAll();
    await waitFor(() => warm.closed || warm.bytesRead > 4 * 1024 * 1024, 10_000);
    warm.destroy();
    await sleep(200);
    const idle = rssBytes(child.pid!);

    for (let i = 0; i < CLIENTS; i++) clients.push(await RawClient.request(port, '/s'));
    // Wait until production stops growing: every stream is parked on a full socket.
    let last = -1;
    let s = await stats();
    for (let i = 0; i < 100 && (s.streams < CLIENTS || s.produced !== last); i++) {
      last = s.produced;
      await sleep(200);
      s = await stats();
    }
    let peak = 0;
    for (let i = 0; i < 5; i++) {
      peak = Math.max(peak, rssBytes(child.pid!));
      await sleep(100);
    }
    const growth = peak - idle;
    // Bound: each stream may hold its whole budget, plus per-connection objects (socket, req/res,
    // bridge, parser state: measured well under 64 KiB each), plus 48 MiB of fixed slack for
    // heap growth steps.
    const bound = CLIENTS * (MAX_BUFFERED_BYTES + 64 * 1024) + 48 * 1024 * 1024;
    console.log(
      `stalled fleet: ${s.streams} streams, RSS growth ${(growth / 2 ** 20).toFixed(1)} MiB (bound ${(bound / 2 ** 20).toFixed(1)} MiB), ` +
        `held ${(s.held / 2 ** 20).toFixed(2)} MiB, max per-stream peak ${s.maxPeak} B, produced ${(s.produced / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(s.streams).toBe(CLIENTS);
    expect(s.maxPeak).toBeLessThanOrEqual(MAX_BUFFERED_BYTES);
    expect(growth).toBeLessThan(bound);
  }, 60_000);
});
