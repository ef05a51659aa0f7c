import http from 'node:http';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen, RawClient, sleep, waitFor } from '../../harness/net';
import { countingUpstream, type CountingUpstream } from '../../harness/upstream';
import { CaptureTransport } from '../helpers';

/** What the upstream of the exact-bytes tests sends: comments, ids, retry, CRLF, an unknown field, a BOM. */
const IRREGULAR = '\ufeff: hello\r\nid: 1\r\nretry: 25\r\nfoo: bar\r\ndata: 日本 😀\r\n\r\nid: 2\ndata: a\ndata: b\n\n';

/** The 32 KiB-budget test's events: 1000 bytes, 8000 of them. */
const EVENT_32 = `data: ${'z'.repeat(992)}\n\n`;
const COUNT_32 = 8000;

describe('gateway byte relay (relay: bytes)', () => {
  let upstream: CountingUpstream;
  let raw: Awaited<ReturnType<typeof listen>>;
  const gateways: RunningGateway[] = [];
  const clients: RawClient[] = [];
  const logs = new CaptureTransport();

  async function gateway(stream: Record<string, unknown>): Promise<RunningGateway> {
    const config = parseConfig({
      port: 0,
      upstream: { url: raw.url },
      stream,
      routes: [
        { path: '/sse', provider: 'passthrough', url: upstream.url },
        { path: '/raw', provider: 'passthrough', url: `${raw.url}/raw` },
        { path: '/raw32', provider: 'passthrough', url: `${raw.url}/32` },
      ],
    });
    const gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
    gateways.push(gw);
    return gw;
  }

  beforeAll(async () => {
    upstream = await countingUpstream({ eventBytes: 100, totalBytes: 256 * 1024 * 1024, text: '海' });
    raw = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (req.url === '/32') return void res.end(EVENT_32.repeat(COUNT_32)); // 8 MB at once: the reads, not the writer, pace it
      // Split inside a CRLF and inside a 4-byte emoji.
      const bytes = Buffer.from(IRREGULAR);
      const cut = [17, bytes.indexOf(Buffer.from('😀')) + 2];
      res.write(bytes.subarray(0, cut[0]));
      setTimeout(() => res.write(bytes.subarray(cut[0], cut[1])), 20);
      setTimeout(() => res.end(bytes.subarray(cut[1])), 40);
    });
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await upstream.close();
    await raw.close();
  });

  it("forwards the upstream's event bytes: comments, id, retry and unknown fields kept; CRLF → LF; BOM dropped", async () => {
    const gw = await gateway({});
    const res = await fetch(`${gw.url}/raw`);
    expect(await res.text()).toBe(IRREGULAR.replace('\ufeff', '').replace(/\r\n/g, '\n'));
  });

  it('decodes and re-encodes each event with relay: events (comments and retry dropped)', async () => {
    const gw = await gateway({ relay: 'events' });
    const res = await fetch(`${gw.url}/raw`);
    expect(await res.text()).toBe('id: 1\ndata: 日本 😀\n\nid: 2\ndata: a\ndata: b\n\n');
  });

  it('pauses the upstream for a client that stops reading, within a 64 KiB budget and without overflowing it', async () => {
    const budget = 64 * 1024;
    const gw = await gateway({ maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 });
    const before = upstream.sent.length;
    const client = await RawClient.request(gw.port, '/sse');
    clients.push(client);
    client.readSome(4096);
    await waitFor(() => upstream.sent.length > before && upstream.sent[before] > 0, 5000);
    // The upstream plateaus: what it could write is bounded by socket buffers + the budget, not by time.
    let last = -1;
    for (let i = 0; i < 50 && upstream.sent[before] !== last; i++) {
      last = upstream.sent[before];
      await sleep(200);
    }
    expect(upstream.sent[before]).toBe(last);
    expect(upstream.sent[before]).toBeLessThan(64 * 1024 * 1024);
    expect(client.closed).toBe(false);
    // Reading again resumes the flow: the stream was paused, not cut.
    client.readAll();
    await waitFor(() => upstream.sent[before] > last, 5000);
    client.destroy();
    await waitFor(() => logs.streams().some((l) => l.route === '/sse'), 5000);
    const line = logs.streams().find((l) => l.route === '/sse');
    expect(line?.outcome).toBe('client_closed');
    expect(line?.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
  });

  it('sizes upstream reads to the room of a 32 KiB budget: a reader that stops and resumes gets every byte, the peak stays within the budget', async () => {
    const budget = 32 * 1024;
    const gw = await gateway({ maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 });
    const seen = logs.streams().length;
    const client = await RawClient.request(gw.port, '/raw32');
    clients.push(client);
    client.readSome(1000);
    await sleep(500);
    client.readAll();
    expect(await client.waitClosed(20_000)).toBe(true);
    await waitFor(() => logs.streams().length > seen, 5000);
    const line = logs.streams()[seen];
    expect(line?.outcome).toBe('completed');
    expect(line?.peakBufferedBytes as number).toBeGreaterThan(16 * 1024);
    expect(line?.peakBufferedBytes as number).toBeLessThanOrEqual(budget);
    expect(client.body()).toBe(EVENT_32.repeat(COUNT_32));
  });
});
