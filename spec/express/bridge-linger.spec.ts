import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport } from '../gateway/helpers';
import { RawClient, sleep, waitFor } from '../harness/net';
import { scriptedUpstream, type ScriptedUpstream } from '../harness/relay-harness';

// A client that stops reading is bounded by the stall timeout while its stream runs. When the
// stream ends for another reason while the socket is full (ERR_TIDEGATE_OVERFLOW on the event
// relay, the route's total timeout on the byte relay), the stream is finished and unlisted
// (activeStreams 0, /debug/streams empty), and res.end() would wait behind the unsent bytes
// forever (keepAliveTimeout only starts after 'finish'), megabytes in the kernel's send queue
// with nothing counting or resetting them. The bridge lingers as after a stall cut: the
// connection is released within a few stallTimeoutMs once the peer takes nothing.

const STALL_MS = 400;
const BIG = `data: ${'b'.repeat(4000)}\n\n`;

describe('a non-reading client after its stream ended behind a full socket', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  const clients: RawClient[] = [];
  const logs = new CaptureTransport();
  const connections = (): Promise<number> => new Promise((r) => gw.server.getConnections((_e, n) => r(n)));

  beforeAll(async () => {
    up = await scriptedUpstream();
    up.scripts.set('big', () => Array.from({ length: 10_000 }, () => BIG));
    const policy = { maxBufferedBytes: 32 * 1024, stallTimeoutMs: STALL_MS };
    gw = await startGateway(
      parseConfig({
        port: 0,
        upstream: { url: up.url },
        retry: { maxAttempts: 1 },
        stream: { heartbeatMs: 0 },
        routes: [
          { path: '/ev', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders: ['x-script'], policy: { ...policy, relay: 'events' } },
          { path: '/bytes', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders: ['x-script'], policy: { ...policy, stallTimeoutMs: 600 }, timeouts: { totalMs: 300 } },
        ],
      }),
      { logger: createLogger({ transports: [logs] }) },
    );
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await gw?.close();
    await up?.close();
  });

  it.each([
    ['/ev', 'big', 'overflow'],
    ['/bytes', 'big', 'timeout'],
  ])('%s (%s): the stream ends as %s, then the connection is released within a few stall timeouts', async (path, script, outcome) => {
    // /bytes: stall timeout 600 ms, total timeout 300 ms (the socket is full within ~100 ms), so the
    // total timeout ends it behind the full socket before the stall timer could.
    const before = logs.streams().length;
    const c = await RawClient.request(gw.port, path, { headers: { 'x-script': script } });
    clients.push(c);
    c.readSome(1000); // then never again
    await waitFor(() => logs.streams().length > before, 5000);
    expect(logs.streams()[before]?.outcome).toBe(outcome);
    expect(gw.app.gateway.activeStreams).toBe(0);
    let open = await connections();
    for (let i = 0; i < 40 && open > 0; i++) {
      await sleep(100);
      open = await connections();
    }
    expect(open).toBe(0); // 4 s: ten stall timeouts
  });
});
