/**
 * An https upstream (reads not sized) at the smallest byte-relay budget relays events with
 * demand in bytes: cap-sized events within the budget while paused; many short data lines.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RunningGateway } from '../../src/gateway/server';
import { upstreamAgent } from '../../src/http/request';
import type { CaptureTransport } from '../gateway/helpers';
import { RawClient, waitFor } from '../harness/net';
import { sampleBuffered, SSE_HEAD, testGateway } from '../harness/relay-harness';
import { CERT, KEY } from '../harness/tls-fixture';

// The certificate is self-signed for 127.0.0.1 (tls-fixture.ts).

const KIB = 1024;
const MIN = 30 * KIB;
const CAP = MIN - 16 * KIB - 6 * KIB;

describe('https upstream at a small budget', () => {
  let server: https.Server;
  let url: string;
  let body = '';
  let gw: RunningGateway;
  let logs: CaptureTransport;
  const clients: RawClient[] = [];
  const agentOptions = (upstreamAgent(new URL('https://127.0.0.1')) as https.Agent).options as https.AgentOptions;

  beforeAll(async () => {
    agentOptions.ca = CERT;
    server = https.createServer({ key: KEY, cert: CERT }, (req, res) => {
      req.resume();
      res.writeHead(200, SSE_HEAD);
      const all = Buffer.from(body);
      let i = 0;
      const write = (): void => {
        while (i < all.length && !res.destroyed) {
          const piece = all.subarray(i, i + 16 * KIB);
          i += piece.length;
          if (!res.write(piece)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const route = (path: string): Record<string, unknown> => ({ path, provider: 'passthrough', url: `${url}${path}`, policy: { maxBufferedBytes: MIN, overflow: 'pause', stallTimeoutMs: 0 } });
    ({ gw, logs } = await testGateway(url, [route('/cap'), route('/lines')], { heartbeatMs: 0 }));
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await gw.close();
    delete agentOptions.ca;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  async function pausedRun(path: string): Promise<{ line: Record<string, unknown>; gauge: number; body: string }> {
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, path);
    clients.push(client);
    client.readSome(1000);
    const gauge = await sampleBuffered(gw.url, 800);
    client.readAll();
    expect(await client.waitClosed(15_000)).toBe(true);
    const mine = (): Record<string, unknown> | undefined => (logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === path);
    await waitFor(() => mine() !== undefined, 5000);
    return { line: mine() as Record<string, unknown>, gauge, body: client.body() };
  }

  it('events whose line is the cap: a paused client stays within the budget, then every byte arrives', async () => {
    const event = `data: ${'c'.repeat(CAP - 6)}\n\n`;
    body = event.repeat(500);
    const { line, gauge, body: out } = await pausedRun('/cap');
    expect(line.outcome).toBe('completed');
    expect(out === body).toBe(true);
    expect(gauge).toBeLessThanOrEqual(MIN);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(MIN);
  });

  // As the /lines case of spec/e2e/gzip-upstream-small-budget.spec.ts: an event of 4096 one-byte
  // data lines (8191 data bytes, within the parser's maxEventBytes = smallEventBytes) re-encodes to
  // 32 KiB, over maxElementBytes and the budget; the paused stream must not end with
  // ERR_TIDEGATE_OVERFLOW.
  it('an event of many short data lines within maxEventBytes is not an overflow', async () => {
    const ok = `data: ${'o'.repeat(1000)}\n\n`;
    body = ok.repeat(3) + 'data:a\n'.repeat(4096) + '\n' + ok.repeat(3);
    const { line, body: out } = await pausedRun('/lines');
    expect(out.startsWith(ok.repeat(3))).toBe(true);
    expect(line.outcome === 'completed' || line.errorCode === 'ERR_TIDEGATE_SSE_LIMIT').toBe(true);
  });
});
