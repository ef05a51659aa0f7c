import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { RawClient, waitFor } from '../harness/net';
import { countingUpstream, type CountingUpstream } from '../harness/upstream';
import { CaptureTransport } from './helpers';

/**
 * A FIN from the client is a client that left (docs/decisions.md, "A half-closed client
 * connection is a client that left"): its upstream is cancelled at once, whether the client only
 * shut down its sending side or closed the connection.
 */
describe('a client that half-closes its connection', () => {
  let upstream: CountingUpstream;
  let gw: RunningGateway;
  const logs = new CaptureTransport();
  const clients: RawClient[] = [];

  beforeAll(async () => {
    upstream = await countingUpstream({ eventBytes: 100, totalBytes: 1024 * 1024, eventsPerSecond: 50 });
    const config = parseConfig({ port: 0, routes: [{ path: '/sse', provider: 'passthrough', url: upstream.url }] });
    gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await gw.close();
    await upstream.close();
  });

  it('mid-stream: its upstream is cancelled at once and the stream logged client_closed', async () => {
    const client = await RawClient.request(gw.port, '/sse');
    clients.push(client);
    client.readAll();
    await waitFor(() => client.text().includes('data: x'), 5000);
    const endedAt = Date.now();
    client.socket.end();
    await waitFor(() => upstream.aborted >= 1, 5000);
    expect((upstream.abortedAt[0] as number) - endedAt).toBeLessThan(1000);
    expect(await client.waitClosed(5000)).toBe(true);
    await waitFor(() => logs.streams().length >= 1, 5000);
    expect(logs.streams()[0]).toMatchObject({ outcome: 'client_closed', route: '/sse' });
  });
});
