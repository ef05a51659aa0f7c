import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { trackOpen } from './net';

/**
 * A listener that never accepts (Python: Node's net always accepts), with a backlog of 0 that one
 * connection fills: the kernel then drops further SYNs, so a new connection hangs in SYN-SENT,
 * exactly like an upstream host that does not answer. `close()` ends the filler and the listener.
 */
export async function blackHole(): Promise<{ port: number; close(): void }> {
  const py: ChildProcess = spawn('python3', [path.join(__dirname, 'no-accept.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let filler: net.Socket | undefined;
  const close = (): void => {
    untrack();
    filler?.destroy();
    py.kill();
  };
  const untrack = trackOpen(close);
  const port = await new Promise<number>((resolve, reject) => {
    py.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    py.once('error', reject);
  });
  const socket = net.connect(port, '127.0.0.1');
  filler = socket;
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { port, close };
}
