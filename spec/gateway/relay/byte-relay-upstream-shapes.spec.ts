/**
 * Upstream shapes around the byte relay's sized reads: a redirected upstream (whose
 * final request node-fetch makes on its own) and a body whose chunked framing breaks mid-stream.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { openUpstreamStream, upstreamAgent } from '../../../src/http/request';
import type { RunningGateway } from '../../../src/gateway/server';
import type { CaptureTransport } from '../helpers';
import { RawClient, sleep, waitFor } from '../../harness/net';
import { sampleBuffered, scriptedUpstream, SSE_HEAD, testGateway, type ScriptedUpstream, type Step } from '../../harness/relay-harness';

const KIB = 1024;
const EVENT = `data: ${'r'.repeat(1000 - 8)}\n\n`;

describe('upstream shapes under the byte relay', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  const clients: RawClient[] = [];
  const route = (path: string, budget: number): Record<string, unknown> => ({ path, provider: 'passthrough', url: `${up.url}${path}`, followRedirects: true, policy: { maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 } });

  beforeAll(async () => {
    up = await scriptedUpstream();
    ({ gw, logs } = await testGateway(up.url, [route('/redir', 64 * KIB), route('/badchunk', 64 * KIB), route('/again', 30 * KIB), route('/reset-min', 30 * KIB)], { heartbeatMs: 0 }));
    up.scripts.set('/redir', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(307, { location: '/target' }).end();
    });
    up.scripts.set('/target', () => {
      const steps: Step[] = [];
      for (let k = 0; k < 8000; k += 10) steps.push(EVENT.repeat(10));
      return steps;
    });
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  async function lineOf(path: string, before: number): Promise<Record<string, unknown>> {
    const mine = (): Record<string, unknown> | undefined => (logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === path);
    await waitFor(() => mine() !== undefined, 5000);
    return mine() as Record<string, unknown>;
  }

  // node-fetch follows a redirect with a ClientRequest of its own; the agent hook (request.ts
  // hooked()/attach()) attaches every request it sees while a call is in flight, so the final
  // response's reads are sized and bufferedBytes() counts its IncomingMessage and socket. Else
  // the body is node-fetch's PassThrough (16 KiB on each side) read in unsized 16 KiB reads, an
  // unasked reader holds over the ReadGate's UNSIZED_READER_BYTES (36 KiB), and the
  // tidegate_buffered_bytes gauge goes over the budget (72867 against 65536; the next spec samples it).
  it('a redirected upstream (307): paused streams complete within the budget with every byte', async () => {
    const before = logs.streams().length;
    const many = await Promise.all(Array.from({ length: 4 }, () => RawClient.request(gw.port, '/redir')));
    clients.push(...many);
    for (const c of many) c.readSome(1000);
    await sampleBuffered(gw.url, 800);
    for (const c of many) c.readAll();
    for (const c of many) expect(await c.waitClosed(15_000)).toBe(true);
    await waitFor(() => logs.streams().slice(before).filter((l) => (l as Record<string, unknown>).route === '/redir').length >= 4, 5000);
    const lines = (logs.streams().slice(before) as Array<Record<string, unknown>>).filter((l) => l.route === '/redir');
    for (const c of many) expect(c.body() === EVENT.repeat(8000)).toBe(true);
    for (const l of lines) expect(l).toMatchObject({ outcome: 'completed' });
    expect(Math.max(...lines.map((l) => l.peakBufferedBytes as number))).toBeLessThanOrEqual(64 * KIB);
  });

  it('bufferedBytes() of a redirected upstream counts every byte read into userland (the IncomingMessage and its socket too)', async () => {
    const url = `${up.url}/redir`;
    const stream = await openUpstreamStream({ url, method: 'GET', readBytes: () => 64 * KIB, followRedirects: true });
    try {
      await sleep(300); // nobody asks: the reader fills its buffers and stops
      const agent = upstreamAgent(new URL(url));
      const sockets = Object.values(agent.sockets).flat() as Array<net.Socket & { _httpMessage?: http.ClientRequest & { res?: http.IncomingMessage } }>;
      const res = sockets.map((s) => s._httpMessage?.res).find((r) => r !== undefined && r.statusCode === 200) as http.IncomingMessage;
      expect(res).toBeDefined();
      const body = stream.response.body as unknown as Readable & Partial<Writable>;
      const held = (res.socket?.readableLength ?? 0) + (body === (res as Readable) ? 0 : res.readableLength) + body.readableLength + (body.writableLength ?? 0);
      expect(held).toBeGreaterThan(0);
      expect(stream.bufferedBytes()).toBe(held);
    } finally {
      stream.body.subscribeWithDemand({ error: () => undefined }).cancel();
    }
  });

  it('a chunked body whose framing breaks mid-event: the complete events, then an error; logged upstream_reset, never hangs', async () => {
    up.scripts.set('/badchunk', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { ...SSE_HEAD, 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      // Raw chunked framing: two good chunks (the second ends mid-event), then a bad chunk size line.
      const good = EVENT.repeat(40) + EVENT.slice(0, 500);
      const body = `${Buffer.byteLength(good).toString(16)}\r\n${good}\r\nzz\r\nxx\r\n`;
      setTimeout(() => res.socket?.write(body), 20);
    });
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, '/badchunk');
    clients.push(client);
    client.readAll();
    expect(await client.waitClosed(5000)).toBe(true);
    const line = await lineOf('/badchunk', before);
    expect(line.outcome).toBe('upstream_reset');
    const body = client.body();
    expect(body.startsWith(EVENT.repeat(40))).toBe(true);
    expect(body.slice(EVENT.length * 40)).toMatch(/^event: error\n/);
  });

  it('three paused streams one after another on one keep-alive upstream socket (30 KiB budget, 8191 B events): each completes within the budget', async () => {
    const big = `data: ${'k'.repeat(8191 - 8)}\n\n`;
    up.scripts.set('/again', () => Array.from({ length: 60 }, () => big.repeat(10)));
    const accepted = up.accepted;
    for (let i = 0; i < 3; i++) {
      const before = logs.streams().length;
      const client = await RawClient.request(gw.port, '/again');
      clients.push(client);
      client.readSome(1000);
      await sleep(300);
      client.readAll();
      expect(await client.waitClosed(15_000)).toBe(true);
      const line = await lineOf('/again', before);
      expect(line.outcome).toBe('completed');
      expect(client.body() === big.repeat(600)).toBe(true);
      expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(30 * KIB);
      await sleep(20);
    }
    expect(up.accepted - accepted).toBeLessThanOrEqual(1); // the pooled socket is reused
  });

  it('an upstream reset mid-event at a 30 KiB budget with the client paused: the complete events, then an error; upstream_reset, never hangs', async () => {
    // 100 events: more than the budget, less than the path's bounded kernel queues hold (bytes the
    // upstream's own send queue still holds are lost with its reset, before any gateway sees them).
    up.scripts.set('/reset-min', () => [EVENT.repeat(100), EVENT.slice(0, 400), 20, { reset: true }]);
    const before = logs.streams().length;
    const client = await RawClient.request(gw.port, '/reset-min');
    clients.push(client);
    await sleep(300);
    client.readAll();
    expect(await client.waitClosed(5000)).toBe(true);
    const line = await lineOf('/reset-min', before);
    expect(line.outcome).toBe('upstream_reset');
    const body = client.body();
    expect(body.startsWith(EVENT.repeat(100))).toBe(true);
    expect(body.slice(EVENT.length * 100)).toMatch(/^event: error\n/);
  });
});
