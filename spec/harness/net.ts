import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

const open = new Set<() => unknown>();

/**
 * Registers `close` (a server, socket or process the harness opened) for {@link closeAll}.
 * Returns the function to call once the owner closed it itself, so it is not closed twice.
 */
export function trackOpen(close: () => unknown): () => void {
  const entry = (): unknown => close();
  open.add(entry);
  return () => {
    open.delete(entry);
  };
}

/**
 * Tracks a child process the harness spawned ({@link trackOpen}) and returns its `stop`: SIGKILL,
 * resolved once it exited (at once if it already had).
 */
export function trackChild(child: ChildProcess): () => Promise<void> {
  const stop = async (): Promise<void> => {
    untrack();
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  };
  const untrack = trackOpen(stop);
  child.once('exit', untrack);
  return stop;
}

/**
 * Closes everything the harness opened and nobody closed yet, newest first (a gateway before its
 * upstream), each given at most `perHandleMs`. Runs after every spec file (jest.config.js
 * `setupFilesAfterEnv`), so a setup that throws before its own teardown still lets jest exit.
 */
export async function closeAll(perHandleMs = 5000): Promise<void> {
  const closers = [...open].reverse();
  open.clear();
  for (const close of closers) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, perHandleMs);
      timer.unref();
    });
    try {
      await Promise.race([Promise.resolve().then(close), timeout]);
    } catch {
      // teardown of a resource that already failed: nothing left to report
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Starts `handler` (an Express app or request listener) on 127.0.0.1, on `port` (0: ephemeral). */
export async function listen(
  handler: http.RequestListener,
  port = 0,
): Promise<{ server: http.Server; port: number; url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      untrack();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const untrack = trackOpen(close);
  server.once('close', untrack); // closed by the spec through `server` itself
  return { server, port: bound, url: `http://127.0.0.1:${bound}`, close };
}

/**
 * A raw HTTP/1.1 client on a real socket that reads only when told to, so tests control the
 * reader's speed at the TCP level (`socket.pause()` + bounded `socket.read(n)`).
 */
export class RawClient {
  readonly socket: net.Socket;
  private received: Buffer[] = [];
  bytesRead = 0;
  private timer: NodeJS.Timeout | undefined;
  closed = false;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    const untrack = trackOpen(() => this.destroy());
    socket.on('close', () => {
      this.closed = true;
      untrack();
    });
    socket.on('error', () => undefined);
  }

  /** Connects and sends one request; the socket starts paused (nothing is read). */
  static async request(port: number, path: string, options: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<RawClient> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    }).catch((err: unknown) => {
      socket.destroy();
      throw err;
    });
    socket.pause();
    const client = new RawClient(socket);
    const body = options.body ?? '';
    const headers = { host: `127.0.0.1:${port}`, connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...(options.headers ?? {}) };
    const head = `${options.method ?? 'GET'} ${path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
    socket.write(head + body);
    return client;
  }

  /** Reads whatever the socket has buffered, up to `maxBytes`. */
  readSome(maxBytes = Infinity): number {
    let total = 0;
    while (total < maxBytes) {
      const available = this.socket.readableLength;
      const want = Math.min(maxBytes - total, available > 0 ? available : 65536);
      const chunk: Buffer | null = this.socket.read(Math.min(want, Math.max(available, 1)));
      if (chunk === null) {
        this.socket.read(0); // ask the stream to pull from the kernel
        break;
      }
      this.received.push(chunk);
      total += chunk.length;
    }
    this.bytesRead += total;
    return total;
  }

  /** Reads `bytesPerSecond` in ticks of `tickMs` until stopped. */
  readAtRate(bytesPerSecond: number, tickMs = 50): void {
    this.stopReading();
    this.timer = setInterval(() => this.readSome(Math.max(1, Math.round((bytesPerSecond * tickMs) / 1000))), tickMs);
  }

  /** Reads everything as it arrives; `onChunk` sees each chunk once it is recorded. */
  readAll(onChunk?: (chunk: Buffer) => void): void {
    this.stopReading();
    this.socket.on('data', (c: Buffer) => {
      this.received.push(c);
      this.bytesRead += c.length;
      onChunk?.(c);
    });
    this.socket.resume();
  }

  stopReading(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Everything received so far, as text. */
  text(): string {
    return Buffer.concat(this.received).toString('utf8');
  }

  /** The response body received so far, de-chunked when `Transfer-Encoding: chunked`. */
  body(): string {
    const raw = Buffer.concat(this.received);
    const headEnd = raw.indexOf('\r\n\r\n');
    if (headEnd === -1) return '';
    const head = raw.subarray(0, headEnd).toString('latin1');
    let rest = raw.subarray(headEnd + 4);
    if (!/transfer-encoding:\s*chunked/i.test(head)) return rest.toString('utf8');
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd === -1) break;
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (!(size > 0) || rest.length < lineEnd + 2 + size) break;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
    return Buffer.concat(parts).toString('utf8');
  }

  /** Resolves when the server closed the connection (or after `timeoutMs`). */
  async waitClosed(timeoutMs = 5000): Promise<boolean> {
    if (this.closed) return true;
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this.socket.once('close', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  destroy(): void {
    this.stopReading();
    this.socket.destroy();
  }
}

/** Waits until `predicate` holds, polling every `intervalMs`, or throws after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs = 5000, intervalMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`waitFor: condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
