/**
 * The upstream idle deadline against an upstream in another process that floods its socket with
 * comments and blank lines: the gateway's reads never wait, so the relay spends nearly all its
 * time handing reads on. Those short pauses must not stop the clock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { RunningGateway } from '../../src/gateway/server';
import type { CaptureTransport } from './helpers';
import { RawClient, waitFor } from '../harness/net';
import { testGateway } from '../harness/relay-harness';

const IDLE_MS = 500;

// An event, then `: keep-alive` blocks and blank lines as fast as its socket takes them.
const FLOOD = `
const http = require('node:http');
const block = Buffer.from(': keep-alive\\n\\n\\n\\n'.repeat(1024));
const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: 1\\n\\n');
  let closed = false;
  const pump = () => { while (!closed && res.write(block)); };
  res.on('drain', pump);
  res.on('close', () => { closed = true; process.send({ closed: Date.now() }); });
  pump();
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
setTimeout(() => process.exit(0), 20000).unref();
`;

describe('idle timeout against an upstream flooding its socket with comments', () => {
  let upstream: ChildProcess;
  let port = 0;
  const closedAt: number[] = [];
  let gw: RunningGateway;
  let logs: CaptureTransport;

  beforeAll(async () => {
    upstream = spawn(process.execPath, ['-e', FLOOD], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    port = await new Promise<number>((resolve) => {
      upstream.on('message', (m: { port?: number; closed?: number }) => {
        if (m.port !== undefined) resolve(m.port);
        if (m.closed !== undefined) closedAt.push(m.closed);
      });
    });
    const route = (path: string, relay: string): Record<string, unknown> => ({
      path,
      provider: 'passthrough',
      url: `http://127.0.0.1:${port}/flood`,
      timeouts: { idleMs: IDLE_MS, totalMs: 0 },
      policy: { maxBufferedBytes: 64 * 1024, overflow: 'pause', stallTimeoutMs: 0, relay },
    });
    ({ gw, logs } = await testGateway(`http://127.0.0.1:${port}`, [route('/bytes', 'bytes'), route('/events', 'events')], { heartbeatMs: 0 }));
  });
  afterAll(async () => {
    await gw.close();
    upstream.kill();
  });

  it.each(['bytes', 'events'])('%s relay: the stream ends with TimeoutError(idle) about idleMs after its last event, and the upstream is closed', async (relay) => {
    const before = logs.streams().length;
    const closes = closedAt.length;
    const started = Date.now();
    const client = await RawClient.request(gw.port, `/${relay}`);
    client.readAll();
    try {
      expect(await client.waitClosed(IDLE_MS + 4000)).toBe(true);
    } finally {
      client.destroy();
    }
    const took = Date.now() - started;
    await waitFor(() => logs.streams().length > before && closedAt.length > closes, 2000);
    expect(logs.streams()[before]).toMatchObject({ outcome: 'timeout', timeoutKind: 'idle' });
    expect(took).toBeGreaterThanOrEqual(IDLE_MS);
    expect(took).toBeLessThan(IDLE_MS + 2000);
    expect(client.body()).toContain('data: 1\n\n');
  });
});
