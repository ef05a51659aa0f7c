/**
 * A drained stream's last frame waits in Node behind what a slow reader has not taken yet: the
 * shutdown must not cut that connection while its bytes still flush (within the flush wait).
 */
import type http from 'node:http';
import type { RunningGateway } from '../../src/gateway/server';
import { RawClient, sleep, waitFor } from '../harness/net';
import { scriptedUpstream, SSE_HEAD, testGateway, type ScriptedUpstream } from '../harness/relay-harness';

describe('shutdown with a reader behind', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  const open = new Set<http.ServerResponse>();

  beforeAll(async () => {
    up = await scriptedUpstream();
    // 8 MB of 1 KB events at once (more than the loopback socket buffers hold), then silence.
    up.scripts.set('/feed', (_req, res) => {
      res.writeHead(200, SSE_HEAD);
      const event = `data: ${'f'.repeat(1024 - 8)}\n\n`;
      res.write(event.repeat(8 * 1024));
      open.add(res);
      res.on('close', () => open.delete(res));
    });
    ({ gw } = await testGateway(up.url, [{ path: '/events', provider: 'passthrough', url: `${up.url}/feed`, policy: { stallTimeoutMs: 0 } }], { heartbeatMs: 0 }));
  });
  afterAll(async () => {
    for (const r of open) r.destroy();
    await up.close();
  });

  it('a client that starts reading after its stream was ended still gets ERR_TIDEGATE_SHUTDOWN and the end of the body', async () => {
    const client = await RawClient.request(gw.port, '/events');
    try {
      await sleep(400); // the kernel's buffers and the budget fill; the client reads nothing yet
      const stopped = gw.shutdown(50);
      await sleep(300); // the grace is over: the stream ended with its frame queued behind the rest
      client.readAll();
      await stopped;
      expect(await client.waitClosed(5000)).toBe(true);
      const text = client.text();
      expect(text).toContain('ERR_TIDEGATE_SHUTDOWN');
      expect(text.endsWith('0\r\n\r\n')).toBe(true);
    } finally {
      client.destroy();
    }
    await waitFor(() => open.size === 0, 2000);
  });
});
