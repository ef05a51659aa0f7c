import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectSse } from '../../src/client';
import { SseHttpError } from '../../src/errors';

/**
 * An error answer's body that goes silent, read by `connectSse` through tidegate's HTTP stack:
 * the status and the part of the body that came are the error, after a silence of
 * `idleTimeoutMs`; the idle timer that waits for an answer does not cut that read.
 */

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://x');
    const status = Number(url.searchParams.get('status'));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': '200' };
    if (url.searchParams.has('retryAfter')) headers['retry-after'] = url.searchParams.get('retryAfter') as string;
    res.writeHead(status, headers);
    if (url.pathname === '/trickle') {
      // A byte every 150 ms: never silent for idleTimeoutMs.
      const t = setInterval(() => res.write('x'), 150);
      res.on('close', () => clearInterval(t));
    } else res.write('{"error":"partial');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

function failure(url: string, options: Parameters<typeof connectSse>[1]): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    connectSse(url, options).subscribe({ error: (error: unknown) => resolve({ error, ms: performance.now() - started }), complete: () => resolve({ error: undefined, ms: performance.now() - started }) });
  });
}

describe('connectSse reading an error body that goes silent', () => {
  it('fails with the status and the body that came, after idleTimeoutMs of silence', async () => {
    const { error, ms } = await failure(`${base}/silent?status=401`, { idleTimeoutMs: 300, reconnect: false });
    expect(error).toBeInstanceOf(SseHttpError);
    expect(error).toMatchObject({ status: 401, body: '{"error":"partial' });
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(3000);
  });

  it('keeps reading a body whose bytes come more often than idleTimeoutMs, up to maxErrorBodyBytes', async () => {
    const { error } = await failure(`${base}/trickle?status=401`, { idleTimeoutMs: 300, maxErrorBodyBytes: 4, reconnect: false });
    expect(error).toBeInstanceOf(SseHttpError);
    expect(error).toMatchObject({ status: 401, body: 'xxxx' });
  });

  it("honours a 503's Retry-After when its body goes silent", async () => {
    const delays: number[] = [];
    const { error } = await failure(`${base}/silent?status=503&retryAfter=1`, { idleTimeoutMs: 200, maxAttempts: 2, initialDelayMs: 10, onReconnect: (info) => delays.push(info.delayMs) });
    expect(error).toMatchObject({ status: 503 });
    expect(delays).toEqual([1000]);
  });
});
