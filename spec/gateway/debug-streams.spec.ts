import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import type { StreamSnapshot } from '../../src/gateway/metrics';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { RawClient, sleep, waitFor } from '../harness/net';
import { countingUpstream, type CountingUpstream } from '../harness/upstream';
import { CaptureTransport } from './helpers';

interface DebugBody {
  activeStreams: number;
  streams: StreamSnapshot[];
}

describe('gateway GET /debug/streams', () => {
  let upstream: CountingUpstream;
  const gateways: RunningGateway[] = [];
  const clients: RawClient[] = [];
  const logs = new CaptureTransport();

  async function gateway(debug: boolean | undefined): Promise<RunningGateway> {
    const config = parseConfig({
      port: 0,
      upstream: { url: upstream.url },
      stream: { maxBufferedBytes: 64 * 1024, stallTimeoutMs: 0 },
      routes: [{ path: '/sse', provider: 'passthrough', url: upstream.url }],
      ...(debug === undefined ? {} : { debug: { streams: debug } }),
    });
    const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
    gateways.push(gw);
    return gw;
  }

  async function snapshot(gw: RunningGateway): Promise<DebugBody> {
    const res = await fetch(`${gw.url}/debug/streams`);
    expect(res.status).toBe(200);
    return (await res.json()) as DebugBody;
  }

  beforeAll(async () => {
    upstream = await countingUpstream({ eventBytes: 100, totalBytes: 64 * 1024 * 1024, text: '海' });
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await upstream.close();
  });

  it('is not served unless debug.streams is set', async () => {
    const gw = await gateway(undefined);
    const res = await fetch(`${gw.url}/debug/streams`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('--debug-streams');
  });

  it("shows a client that stopped reading as the stream's holder: socket full, nothing requested, budget within its size, upstream paused", async () => {
    const gw = await gateway(true);
    expect(await snapshot(gw)).toEqual({ activeStreams: 0, streams: [] });
    const client = await RawClient.request(gw.port, '/sse');
    clients.push(client);
    client.readSome(4096);
    // Until the kernel buffers and the budget fill, the snapshot changes; then it holds still.
    let s: StreamSnapshot | undefined;
    for (let i = 0; i < 100; i++) {
      const body = await snapshot(gw);
      s = body.streams[0];
      if (s?.bridge?.socketFull === true && s.upstream?.paused === true) break;
      await sleep(50);
    }
    expect(s).toBeDefined();
    const snap = s as StreamSnapshot;
    expect(snap.route).toBe('/sse');
    expect(typeof snap.streamId).toBe('string');
    expect(snap.ageMs).toBeGreaterThan(0);
    const bridge = snap.bridge as NonNullable<StreamSnapshot['bridge']>;
    expect(bridge.socketFull).toBe(true);
    expect(bridge.finished).toBe(false);
    expect(bridge.writableLength).toBeGreaterThan(0);
    expect(bridge.budgetMax).toBe(64 * 1024);
    expect(bridge.budgetUsed).toBeGreaterThan(0);
    expect(bridge.budgetUsed).toBeLessThanOrEqual(bridge.budgetMax);
    expect(bridge.bytes).toBeGreaterThan(64 * 1024);
    expect(snap.upstream?.paused).toBe(true);
    expect(snap.upstream?.readsSized).toBe(true);
    expect(snap.upstream?.ended).toBe(false);
    // Nothing reaches the upstream while the client reads nothing.
    const sent = upstream.sent[upstream.sent.length - 1];
    await sleep(300);
    expect(upstream.sent[upstream.sent.length - 1]).toBe(sent);
    expect((await snapshot(gw)).streams[0]?.bridge?.bytes).toBe(bridge.bytes);
  });

  it('lists no stream once its client left', async () => {
    const gw = await gateway(true);
    const client = await RawClient.request(gw.port, '/sse');
    clients.push(client);
    client.readSome(4096);
    await waitFor(() => gw.app.gateway.activeStreams === 1, 5000);
    // Listed once its upstream answered (activeStreams counts it from its arrival).
    let listed = 0;
    for (let i = 0; i < 100 && listed === 0; i++) {
      listed = (await snapshot(gw)).streams.length;
      if (listed === 0) await sleep(20);
    }
    expect(listed).toBe(1);
    client.destroy();
    await waitFor(() => gw.app.gateway.activeStreams === 0, 5000);
    expect(await snapshot(gw)).toEqual({ activeStreams: 0, streams: [] });
  });
});
