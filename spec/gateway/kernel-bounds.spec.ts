/**
 * The gateway's kernel buffer bounds end to end: a stalled client's stream holds a bounded
 * kernel send queue on the client socket and a bounded receive queue on the upstream socket, both
 * shown by /debug/streams and /metrics; without the socket options addon the gateway runs and
 * logs once what it could not bound.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_KERNEL_UNSENT_BYTES } from '../../src/express/bridge/kernel-unsent';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import type { StreamSnapshot } from '../../src/gateway/metrics';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { DEFAULT_UPSTREAM_RECEIVE_BYTES } from '../../src/http/node-hooks';
import { socketOptionsUnavailable } from '../../src/http/socket-options';
import { startGatewayProcess } from '../harness/gateway-process';
import { RawClient, sleep } from '../harness/net';
import { countingUpstream, type CountingUpstream } from '../harness/upstream';
import { CaptureTransport, parsePrometheus } from './helpers';

const BUILT = existsSync(path.join(__dirname, '..', '..', 'native', 'socket-options', 'build', 'Release', 'socket_options.node'));
const required = process.platform === 'linux' && (BUILT || process.env.CI === 'true');
if (!required) process.stderr.write(`gateway kernel bounds specs skipped: socket options addon not built (${socketOptionsUnavailable() ?? 'not Linux'})\n`);

/** What the kernel may queue beyond TCP_NOTSENT_LOWAT: the segment being filled when the mark was crossed. */
const SEGMENT_SLACK = 64 * 1024;

describe('gateway kernel buffer bounds', () => {
  let upstream: CountingUpstream;
  const clients: RawClient[] = [];
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    upstream = await countingUpstream({ eventBytes: 1000, totalBytes: 256 * 1024 * 1024 });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    for (const gw of gateways.splice(0)) await gw.close();
  });
  afterAll(() => upstream.close());

  (required ? it : it.skip)("shows a stalled stream's kernel queues in /debug/streams and /metrics, each under its bound", async () => {
    const logs = new CaptureTransport();
    const config = parseConfig({ port: 0, upstream: { url: upstream.url }, stream: { stallTimeoutMs: 0 }, routes: [{ path: '/sse', provider: 'passthrough', url: upstream.url }], debug: { streams: true } });
    const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
    gateways.push(gw);
    const client = await RawClient.request(gw.port, '/sse');
    clients.push(client);
    client.readSome(4096);
    // Settled: the bridge's socket is full, the upstream paused, and the kernel's queues read the same twice.
    let snap: StreamSnapshot | undefined;
    let last = '';
    for (let i = 0; i < 100; i++) {
      const body = (await (await fetch(`${gw.url}/debug/streams`)).json()) as { streams: StreamSnapshot[] };
      snap = body.streams[0];
      const now = JSON.stringify(snap?.kernel);
      if (snap?.bridge?.socketFull === true && snap.upstream?.paused === true && now === last) break;
      last = now;
      await sleep(100);
    }
    const kernel = snap?.kernel;
    expect(kernel?.clientSendQueue).toBeGreaterThan(0);
    expect(kernel?.clientUnsent).toBeLessThanOrEqual(DEFAULT_KERNEL_UNSENT_BYTES + SEGMENT_SLACK);
    expect(kernel?.upstreamReceiveQueue).toBeLessThanOrEqual(2 * DEFAULT_UPSTREAM_RECEIVE_BYTES);
    expect(snap?.bridge?.kernel?.sendQueue).toBeGreaterThan(0);
    // Everything the kernel holds for this stalled stream on the gateway's two sockets.
    expect((kernel?.clientSendQueue ?? 0) + (kernel?.upstreamReceiveQueue ?? 0)).toBeLessThanOrEqual(256 * 1024);
    const metrics = parsePrometheus(await (await fetch(`${gw.url}/metrics`)).text());
    expect(metrics.get('tidegate_kernel_client_send_queue_bytes')).toBeGreaterThan(0);
    expect(metrics.get('tidegate_kernel_client_unsent_bytes')).toBeLessThanOrEqual(DEFAULT_KERNEL_UNSENT_BYTES + SEGMENT_SLACK);
    expect(metrics.has('tidegate_kernel_upstream_receive_queue_bytes')).toBe(true);
    // The addon works: nothing to report.
    expect(logs.lines.filter((l) => String(l.message).includes('not bounded'))).toEqual([]);
  });

  it('runs without the socket options addon, relays streams, and logs once what it could not bound', async () => {
    const saved = process.env.TIDEGATE_SOCKET_OPTIONS;
    process.env.TIDEGATE_SOCKET_OPTIONS = 'off';
    const small = await countingUpstream({ eventBytes: 1000, totalBytes: 256 * 1024 });
    const gw = await startGatewayProcess(['--passthrough', `/sse=${small.url}`]).finally(() => {
      if (saved === undefined) delete process.env.TIDEGATE_SOCKET_OPTIONS;
      else process.env.TIDEGATE_SOCKET_OPTIONS = saved;
    });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gw.url}/sse`);
        expect(res.status).toBe(200);
        expect((await res.arrayBuffer()).byteLength).toBeGreaterThanOrEqual(256 * 1024);
      }
      const warned = gw.logs().filter((l) => String(l.message).includes('not bounded'));
      expect(warned).toHaveLength(1);
      expect(warned[0].level).toBe('warn');
      expect(String(warned[0].message)).toContain('TIDEGATE_SOCKET_OPTIONS=off');
      expect(String(warned[0].message)).toContain('net.ipv4.tcp_notsent_lowat');
      // No kernel gauges where the queues cannot be read.
      expect(await (await fetch(`${gw.url}/metrics`)).text()).not.toContain('tidegate_kernel_');
    } finally {
      await gw.stop();
      await small.close();
    }
  }, 60_000);
});
