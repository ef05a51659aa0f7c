import http from 'node:http';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport } from '../helpers';
import { readSse, seqs } from './helpers';

// A resumable passthrough GET route takes its own event ids in Last-Event-ID on its own URL, as a
// browser's EventSource sends them when it reconnects by itself.

describe('resume on a passthrough GET route', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  let upstreamRequests = 0;

  beforeAll(async () => {
    upstream = await listen((_req: http.IncomingMessage, res: http.ServerResponse) => {
      upstreamRequests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const timer = setInterval(() => {
        n++;
        if (n > 30) {
          clearInterval(timer);
          res.end('event: end\ndata: bye\n\n');
          return;
        }
        res.write(`data: tick ${n}\n\n`);
      }, 10);
      res.on('close', () => clearInterval(timer));
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: 'http://127.0.0.1:1' },
      stream: { heartbeatMs: 0 },
      routes: [
        { path: '/events', provider: 'passthrough', url: `${upstream.url}/sse`, terminator: { event: 'end' }, resume: { lingerMs: 2000 } },
        { path: '/other', provider: 'passthrough', url: `${upstream.url}/sse`, terminator: { event: 'end' }, resume: { lingerMs: 2000 } },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('replays after the Last-Event-ID it gave, on the same URL, without a new upstream request', async () => {
    const first = await readSse(`${gw.url}/events`);
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(5);
    first.drop();
    await first.ended;
    const had = [...first.events];
    const before = upstreamRequests;
    const again = await readSse(`${gw.url}/events`, { headers: { 'last-event-id': had[had.length - 1]!.lastEventId } });
    expect(again.status).toBe(200);
    await again.ended;
    expect(upstreamRequests).toBe(before);
    const all = [...had, ...again.events];
    expect(seqs(all, streamId)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.data)).toEqual([...Array.from({ length: 30 }, (_, i) => `tick ${i + 1}`), 'bye']);
  });

  it('starts a new stream when Last-Event-ID is not one of its own', async () => {
    const before = upstreamRequests;
    const fresh = await readSse(`${gw.url}/events`, { headers: { 'last-event-id': 'upstream-7' } });
    await fresh.ended;
    expect(upstreamRequests).toBe(before + 1);
    expect(fresh.events[0]!.data).toBe('tick 1');
  });

  it("answers 404 on a route's own URL for another route's stream, which /v1/streams/{id} serves", async () => {
    const first = await readSse(`${gw.url}/events`);
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(3);
    const last = first.events[2]!.lastEventId;
    const before = upstreamRequests;
    const elsewhere = await readSse(`${gw.url}/other`, { headers: { 'last-event-id': last } });
    await elsewhere.ended;
    expect(elsewhere.status).toBe(404);
    expect(upstreamRequests).toBe(before);
    const anywhere = await readSse(`${gw.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': last } });
    await anywhere.ended;
    expect(anywhere.status).toBe(200);
    expect(seqs(anywhere.events, streamId)[0]).toBe(4);
    await first.ended;
  });
});
