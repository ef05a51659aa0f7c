import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { TimeoutError } from '../../src/errors';
import { openUpstreamStream } from '../../src/http/request';

/**
 * A listener that never accepts (Python: Node's net always accepts), with a backlog of 0 that one
 * connection fills: the kernel then drops further SYNs, so a new connection hangs in SYN-SENT,
 * exactly like an upstream host that does not answer.
 */
async function blackHole(): Promise<{ port: number; close(): void }> {
  const py: ChildProcess = spawn('python3', [path.join(__dirname, '../harness/no-accept.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    py.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    py.once('error', reject);
  });
  const filler = net.connect(port, '127.0.0.1');
  filler.on('error', () => undefined);
  await new Promise<void>((resolve) => filler.once('connect', () => resolve()));
  return {
    port,
    close() {
      filler.destroy();
      py.kill();
    },
  };
}

describe('openUpstreamStream connect timeout', () => {
  it('rejects with TimeoutError kind connect when the connection is not established in time', async () => {
    const hole = await blackHole();
    try {
      const started = Date.now();
      const error = await openUpstreamStream({ url: `http://127.0.0.1:${hole.port}/sse`, method: 'GET', connectTimeoutMs: 300, firstByteTimeoutMs: 10_000 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).kind).toBe('connect');
      // It is the connect timer (300 ms) that fired, not the first-byte one (10 s).
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      hole.close();
    }
  });
});
