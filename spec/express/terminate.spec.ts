import express from 'express';
import { ByteBudget, onBackpressureBuffer } from '../../src/flow';
import { sendFlow, type StreamResult } from '../../src/express';
import { sseDecode, type SseEvent } from '../../src/sse';
import { openUpstreamStream } from '../../src/http/request';
import { listen, RawClient, waitFor } from '../harness/net';
import { countingUpstream } from '../harness/upstream';

describe('stalled reader behind onBackpressureBuffer({ overflow: "terminate" })', () => {
  it('ends that stream with event: error ERR_TIDEGATE_OVERFLOW, aborts its upstream, and leaves other streams alone', async () => {
    // A model-like upstream, paced (5,000 events/s of 500 B): far faster than the stalled client, slower than the reader.
    const up = await countingUpstream({ totalBytes: 16 * 1024 * 1024, eventBytes: 500, eventsPerSecond: 5000 });
    const results = new Map<string, StreamResult>();
    const maxBufferedBytes = 64 * 1024;
    const app = express();
    app.get('/s/:name', async (req, res) => {
      const controller = new AbortController();
      res.once('close', () => controller.abort());
      const upstream = await openUpstreamStream({ url: up.url, method: 'GET', signal: controller.signal });
      const budget = new ByteBudget(maxBufferedBytes);
      const flow = upstream.body.pipe(
        sseDecode(),
        onBackpressureBuffer<SseEvent>({ budget, overflow: 'terminate', sizeOf: (e) => Buffer.byteLength(e.data) + 8 }),
      );
      const handle = sendFlow(res, flow, { budget, stallTimeoutMs: 0 });
      results.set(req.params.name, await handle.done);
    });
    const gw = await listen(app);
    try {
      const stalled = await RawClient.request(gw.port, '/s/stalled');
      const reader = await RawClient.request(gw.port, '/s/reader');
      reader.readAll();
      await waitFor(() => results.has('stalled'), 15_000);
      const r = results.get('stalled')!;
      expect(r.outcome).toBe('overflow');
      expect((r.error as { code: string }).code).toBe('ERR_TIDEGATE_OVERFLOW');
      expect(r.peakBufferedBytes).toBeLessThanOrEqual(maxBufferedBytes);
      await waitFor(() => up.aborted >= 1, 2000);
      // The stalled client, once it reads, finds the error event at the end.
      stalled.readAll();
      await stalled.waitClosed(10_000);
      expect(stalled.body().trimEnd()).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_OVERFLOW","message":"[^"]+"\}$/);
      // The concurrent reader got its whole stream.
      await waitFor(() => results.has('reader'), 20_000);
      expect(results.get('reader')!.outcome).toBe('completed');
      // The bridge is done once the last bytes were handed to the socket; wait for them to arrive.
      expect(await reader.waitClosed(10_000)).toBe(true);
      expect(reader.body().trimEnd().endsWith('data: [DONE]')).toBe(true);
      stalled.destroy();
      reader.destroy();
    } finally {
      await gw.close();
      await up.close();
    }
  });
});
