import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport, parsePrometheus } from './helpers';

const STREAMS = 12;
let upstream: http.Server;
let gw: RunningGateway;
let upstreamOpen = 0;
const sockets: net.Socket[] = [];
const logs = new CaptureTransport();

beforeAll(async () => {
  const event = `data: ${'x'.repeat(1000)}\n\n`;
  upstream = http.createServer((_req, res) => {
    upstreamOpen++;
    res.once('close', () => upstreamOpen--);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const pump = (): void => {
      // Endless fast producer honouring its own backpressure; bounded at 20000 events (20 MB).
      while (sent < 20_000 && !res.destroyed) {
        sent++;
        if (!res.write(event)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end('data: [DONE]\n\n');
    };
    pump();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/sse`;
  gw = await startGateway(
    parseConfig({
      port: 0,
      upstream: { url: 'http://127.0.0.1:1' },
      stream: { heartbeatMs: 0, stallTimeoutMs: 0 },
      routes: [{ path: '/events', provider: 'passthrough', url, terminator: { data: '[DONE]' }, policy: { overflow: 'terminate', maxBufferedBytes: 65536 } }],
    }),
    { logger: createLogger({ transports: [logs] }) },
  );
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await gw.close();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

describe('overflow terminate + many stalled streams + shutdown', () => {
  it('drains to zero: every stream ends once, every upstream is aborted, gauges return to 0, shutdown is bounded', async () => {
    for (let i = 0; i < STREAMS; i++) {
      const s = net.connect(gw.port, '127.0.0.1');
      s.on('error', () => undefined);
      s.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
      s.pause(); // a client that never reads
      sockets.push(s);
    }
    // Every connection must have become a stream (active, or already ended) before the shutdown:
    // on a busy machine the last requests may still be unparsed when the first stream overflows.
    const startedBy = Date.now() + 5000;
    for (;;) {
      const m = parsePrometheus(await gw.app.gateway.metrics.registry.metrics());
      const endedSoFar = [...m].filter(([k]) => k.startsWith('tidegate_streams_total')).reduce((a, [, v]) => a + v, 0);
      if (gw.app.gateway.activeStreams + endedSoFar >= STREAMS || Date.now() > startedBy) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // Let some streams overflow (terminate) while others are still filling kernel buffers.
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && gw.app.gateway.metrics.overflowTerminations.get !== undefined) {
      const m = parsePrometheus(await gw.app.gateway.metrics.registry.metrics());
      const overflowed = [...m].filter(([k]) => k.startsWith('tidegate_overflow_terminations_total')).reduce((a, [, v]) => a + v, 0);
      if (overflowed >= 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const started = Date.now();
    await gw.shutdown(200);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(gw.app.gateway.activeStreams).toBe(0);
    const m = parsePrometheus(await gw.app.gateway.metrics.registry.metrics());
    for (const [k, v] of m) if (k.startsWith('tidegate_active_streams')) expect(v).toBe(0);
    expect(m.get('tidegate_buffered_bytes')).toBe(0);
    const ended = [...m].filter(([k]) => k.startsWith('tidegate_streams_total')).reduce((a, [, v]) => a + v, 0);
    expect(ended).toBe(STREAMS);
    const deadline2 = Date.now() + 2000;
    while (upstreamOpen > 0 && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 20));
    expect(upstreamOpen).toBe(0);
    const outcomes = logs.streams().map((l) => l.outcome);
    expect(outcomes.length).toBe(STREAMS);
    expect(outcomes.every((o) => o === 'overflow' || o === 'shutdown' || o === 'client_closed')).toBe(true);
  });
});
