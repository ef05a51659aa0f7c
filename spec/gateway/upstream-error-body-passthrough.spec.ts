import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './helpers';

/**
 * An upstream error answer whose body goes silent is relayed with its status once the body was
 * silent for `idleMs` (`firstByteMs` when `idleMs` is 0), and one over 64 KiB is refused, on
 * every passthrough route: a resumable one too, whose attempts go through the SSE client.
 */

let upstream: http.Server;
let base: string;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  // A 500 announcing 200 bytes of body, and none of them; under /large/, a 400 with 70,000 bytes.
  upstream = http.createServer((req, res) => {
    req.resume();
    if ((req.url ?? '').startsWith('/large/')) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(`{"error":"${'x'.repeat(70_000)}"}`);
      return;
    }
    res.writeHead(500, { 'content-type': 'application/json', 'content-length': '200' });
    res.flushHeaders();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function gatewayWith(timeouts: Record<string, number>): Promise<TestGateway> {
  const t = await startTestGateway({
    config: { timeouts: { connectMs: 2000, totalMs: 20_000, ...timeouts }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/pt', provider: 'passthrough', url: `${base}/pt` },
      { path: '/rpt', provider: 'passthrough', url: `${base}/rpt`, resumable: true },
      { path: '/large/pt', provider: 'passthrough', url: `${base}/large/pt` },
      { path: '/large/rpt', provider: 'passthrough', url: `${base}/large/rpt`, resumable: true },
    ],
  });
  gateways.push(t);
  return t;
}

async function timed(url: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

describe('an upstream error body that goes silent', () => {
  // [the timeouts, the least time the answer may take (the silence it waits for), what it must not wait for]
  const cases: [Record<string, number>, number, string][] = [
    [{ idleMs: 300, firstByteMs: 8000 }, 250, 'firstByteMs'],
    [{ idleMs: 300, firstByteMs: 0 }, 0, 'totalMs'],
    [{ idleMs: 0, firstByteMs: 400 }, 350, 'totalMs'],
  ];
  for (const [timeouts, atLeastMs, notFor] of cases) {
    it.each(['/pt', '/rpt'])(`%s: with ${JSON.stringify(timeouts)}, relays the status after that silence, not ${notFor}`, async (path) => {
      const t = await gatewayWith(timeouts);
      const { status, ms } = await timed(`${t.gateway.url}${path}`);
      expect(status).toBe(500);
      expect(ms).toBeGreaterThanOrEqual(atLeastMs);
      expect(ms).toBeLessThan(4000);
    });
  }
});

describe('an upstream error body over 64 KiB', () => {
  it.each(['/large/pt', '/large/rpt'])('%s: is refused with 502 ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE, not relayed cut', async (path) => {
    const t = await gatewayWith({ idleMs: 2000, firstByteMs: 2000 });
    const res = await fetch(`${t.gateway.url}${path}`);
    expect(res.status).toBe(502);
    expect(JSON.parse(await res.text())).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_BODY_TOO_LARGE' } });
  });
});
