import compression from 'compression';
import express from 'express';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import { createFlow, type Flow, type FlowSink } from '../../src/flow';
import { sendFlow, sse, type SendFlowOptions, type StreamResult } from '../../src/express';
import { sseDecode, type SseEventInit } from '../../src/sse';
import { BufferOverflowError } from '../../src/errors';
import { openUpstreamStream } from '../../src/http/request';
import { listen, RawClient, sleep, waitFor } from '../harness/net';
import { countingUpstream, type CountingUpstream } from '../harness/upstream';

type Closer = { close(): Promise<void> };
const closers: Closer[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!.close();
});

/** A gateway route relaying `up` through the whole chain with `options`. */
async function relayGateway(up: CountingUpstream, options: SendFlowOptions, results: StreamResult[] = []) {
  const app = express();
  app.get('/s', async (_req, res) => {
    const controller = new AbortController();
    res.once('close', () => controller.abort());
    const upstream = await openUpstreamStream({ url: up.url, method: 'GET', signal: controller.signal });
    const handle = sendFlow(res, upstream.body.pipe(sseDecode()), options);
    results.push(await handle.done);
  });
  const gw = await listen(app);
  closers.push(gw);
  return gw;
}

/** Kernel socket buffers on loopback can hold this much per direction pair (sender max + receiver default). */
function kernelBound(): number {
  // Measured here: the plateau is about 8 MB with 4 MiB tcp_wmem max; receive buffers of a paused reader stay near their default.
  const wmem = readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/).map(Number);
  const rmem = readFileSync('/proc/sys/net/ipv4/tcp_rmem', 'utf8').trim().split(/\s+/).map(Number);
  // Two TCP hops (upstream→gateway, gateway→client), each: sender's max send buffer + receiver's
  // initial receive buffer; plus 1 MiB for Node stream buffers (highWaterMarks) on the way.
  return 2 * (wmem[2] + rmem[1]) + 1024 * 1024;
}

function pyReader(port: number, urlPath: string, rate: number, seconds: number): Promise<{ bytes: number; closed: boolean; text_tail: string }> {
  return new Promise((resolve, reject) => {
    execFile('python3', [path.join(__dirname, '../harness/slow-reader.py'), String(port), urlPath, String(rate), String(seconds)], (err, stdout) => {
      if (err) reject(err);
      else resolve(JSON.parse(stdout));
    });
  });
}

describe('sendFlow response contract', () => {
  it('sends SSE headers at once, before the first event', async () => {
    const app = express();
    app.get('/s', (_req, res) => {
      sendFlow(res, createFlow<SseEventInit>(() => undefined), { heartbeatMs: 0 });
    });
    const gw = await listen(app);
    closers.push(gw);
    const res = await new Promise<http.IncomingMessage>((resolve) => http.get(`${gw.url}/s`, resolve));
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).toContain('no-cache');
    expect(res.headers['x-accel-buffering']).toBe('no');
    res.destroy();
  });

  it('writes : ping heartbeats on an idle stream', async () => {
    const app = express();
    app.get('/s', (_req, res) => {
      sendFlow(res, createFlow<SseEventInit>(() => undefined), { heartbeatMs: 40 });
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s');
    c.readAll();
    await waitFor(() => (c.text().match(/: ping\n\n/g) ?? []).length >= 2, 3000);
    c.destroy();
  });

  it('is not buffered by compression() middleware', async () => {
    const app = express();
    app.use(compression({ threshold: 0 }));
    app.get('/s', (_req, res) => {
      sendFlow(res, createFlow<SseEventInit>((sink) => {
        sink.next({ data: 'first' });
      }), { heartbeatMs: 0 });
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s', { headers: { 'accept-encoding': 'gzip' } });
    c.readAll();
    await waitFor(() => c.text().includes('data: first'), 3000);
    expect(c.text()).not.toMatch(/content-encoding: gzip/i);
    c.destroy();
  });

  it('hands Last-Event-ID to the sse() handler', async () => {
    let seen = '';
    const app = express();
    app.get('/s', sse((_req, ctx) => {
      seen = ctx.lastEventId;
      return createFlow<SseEventInit>((sink) => sink.complete());
    }));
    const gw = await listen(app);
    closers.push(gw);
    await new Promise<void>((resolve) => http.get(`${gw.url}/s`, { headers: { 'last-event-id': 'evt-41' } }, (r) => r.resume().on('end', resolve)));
    expect(seen).toBe('evt-41');
  });

  it('turns an error before the first byte into an HTTP error with a JSON body', async () => {
    const app = express();
    app.get('/s', sse(() => {
      throw Object.assign(new Error('no such model'), { status: 404, code: 'ERR_MODEL' });
    }));
    const gw = await listen(app);
    closers.push(gw);
    const res = await fetch(`${gw.url}/s`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'ERR_MODEL', message: 'no such model' } });
  });

  it('answers an overflow before the first byte with 503', async () => {
    const app = express();
    app.get('/s', sse(() => createFlow<SseEventInit>((sink) => sink.error(new BufferOverflowError()))));
    const gw = await listen(app);
    closers.push(gw);
    const res = await fetch(`${gw.url}/s`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('ERR_TIDEGATE_OVERFLOW');
  });

  it('turns an error after the first byte into event: error and ends the response', async () => {
    const app = express();
    app.get('/s', (_req, res) => {
      sendFlow(res, createFlow<SseEventInit>((sink) => {
        sink.next({ data: 'a' });
        setTimeout(() => sink.error(Object.assign(new Error('boom'), { code: 'ERR_X' })), 20);
      }), { heartbeatMs: 0 });
    });
    const gw = await listen(app);
    closers.push(gw);
    const text = await (await fetch(`${gw.url}/s`)).text();
    expect(text).toBe('data: a\n\nevent: error\ndata: {"code":"ERR_X","message":"boom"}\n\n');
  });
});

// A 1 KiB/s reader re-opens its TCP window every 1-2.5 s here (zero-window probes back off).
const STALL_MS = 3000;

describe('demand bridge endings with a full socket', () => {
  /**
   * A route whose source emits one 64 KiB element per macrotask (the client is paused, so the
   * socket fills), and, once `res.write()` has said "full", emits two more (which the bridge
   * must hold) and then ends with `end(sink)`.
   */
  async function fullSocketEnding(end: (sink: FlowSink<SseEventInit>) => void): Promise<{ body: string; sent: number; result: StreamResult }> {
    const data = 'x'.repeat(64 * 1024);
    let sent = 0;
    const results: StreamResult[] = [];
    const app = express();
    app.get('/s', (_req, res) => {
      let afterFull = 0;
      const flow = createFlow<SseEventInit>((sink) => {
        sink.onRequest((n) => {
          for (let i = 0; i < n; i++) {
            setImmediate(() => {
              if (afterFull >= 2 || sink.isCancelled) return;
              if (res.writableNeedDrain) afterFull++;
              sink.next({ data: `${sent++} ${data}` });
              if (afterFull === 2) end(sink); // the last two elements are held right now
            });
          }
        });
      });
      void sendFlow(res, flow, { maxBufferedBytes: 4 * 1024 * 1024, terminalEvent: { data: '[DONE]' }, stallTimeoutMs: 0, heartbeatMs: 0 }).done.then((r) =>
        results.push(r),
      );
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s');
    await waitFor(() => results.length === 1, 10_000); // it ends while the client still reads nothing
    c.readAll();
    expect(await c.waitClosed(10_000)).toBe(true);
    return { body: c.body(), sent, result: results[0] };
  }

  it('writes the events held for a full socket before completing, then the terminal event', async () => {
    const { body, sent, result } = await fullSocketEnding((sink) => sink.complete());
    expect(result.outcome).toBe('completed');
    expect(body.match(/^data: \d+ x+$/gm)).toHaveLength(sent);
    expect(body.endsWith(`data: ${sent - 1} ${'x'.repeat(64 * 1024)}\n\ndata: [DONE]\n\n`)).toBe(true);
  });

  it('writes the events held for a full socket before the error event', async () => {
    const { body, sent, result } = await fullSocketEnding((sink) => sink.error(Object.assign(new Error('model crashed'), { code: 'ERR_X' })));
    expect(result.outcome).toBe('error');
    expect(body.match(/^data: \d+ x+$/gm)).toHaveLength(sent);
    expect(body.endsWith('event: error\ndata: {"code":"ERR_X","message":"model crashed"}\n\n')).toBe(true);
  });
});

describe('demand bridge backpressure (real sockets)', () => {
  it('a slow reader pauses the upstream: bytes sent plateau under budget + kernel buffers', async () => {
    const up = await countingUpstream({ totalBytes: 256 * 1024 * 1024 });
    closers.push(up);
    const results: StreamResult[] = [];
    const maxBufferedBytes = 64 * 1024;
    const gw = await relayGateway(up, { maxBufferedBytes, stallTimeoutMs: 0 }, results);
    const c = await RawClient.request(gw.port, '/s');
    c.readAtRate(1024);
    await sleep(1200);
    const early = up.sent[0];
    await sleep(1000);
    const late = up.sent[0];
    c.destroy();
    await waitFor(() => results.length === 1);
    const bound = c.bytesRead + maxBufferedBytes + kernelBound();
    console.log(`slow reader: upstream sent ${late} bytes (bound ${bound}), client read ${c.bytesRead}, peak buffered ${results[0].peakBufferedBytes}`);
    expect(late).toBeLessThan(bound);
    expect(late - early).toBeLessThan(maxBufferedBytes + 64 * 1024); // it stopped: no steady growth
    expect(results[0].peakBufferedBytes).toBeLessThanOrEqual(maxBufferedBytes);
  });

  it('cuts a reader that stops reading after stallTimeoutMs with ERR_TIDEGATE_STALLED', async () => {
    const up = await countingUpstream({ totalBytes: 256 * 1024 * 1024 });
    closers.push(up);
    const results: StreamResult[] = [];
    const gw = await relayGateway(up, { stallTimeoutMs: STALL_MS }, results);
    const c = await RawClient.request(gw.port, '/s');
    await waitFor(() => results.length === 1, STALL_MS + 3000);
    expect(results[0].outcome).toBe('stalled');
    expect((results[0].error as { code: string }).code).toBe('ERR_TIDEGATE_STALLED');
    await waitFor(() => up.aborted === 1, 2000);
    c.destroy();
  });

  it('a stalled reader that comes back within another stallTimeoutMs reads the data, then event: error ERR_TIDEGATE_STALLED', async () => {
    const up = await countingUpstream({ totalBytes: 256 * 1024 * 1024 });
    closers.push(up);
    const results: StreamResult[] = [];
    const gw = await relayGateway(up, { stallTimeoutMs: STALL_MS }, results);
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    await waitFor(() => results.length === 1, STALL_MS + 3000);
    expect(results[0].outcome).toBe('stalled');
    c.readAll();
    expect(await c.waitClosed(STALL_MS + 3000)).toBe(true);
    expect(c.body()).toMatch(/\n\nevent: error\ndata: \{"code":"ERR_TIDEGATE_STALLED","message":"[^"]+"\}\n\n$/);
  });

  it('does not cut a reader that still reads 1 KiB/s over the same time', async () => {
    const up = await countingUpstream({ totalBytes: 256 * 1024 * 1024 });
    closers.push(up);
    const results: StreamResult[] = [];
    const gw = await relayGateway(up, { stallTimeoutMs: STALL_MS }, results);
    const r = await pyReader(gw.port, '/s', 1024, (2.3 * STALL_MS) / 1000);
    expect(r.closed).toBe(false);
    expect(r.bytes).toBeGreaterThan(1024);
    await waitFor(() => results.length === 1, 3000);
    expect(results[0].outcome).toBe('client_closed');
  });

  it('a client that disconnects aborts the upstream within 100 ms and leaves no listeners or timers', async () => {
    const up = await countingUpstream({ totalBytes: 256 * 1024 * 1024 });
    closers.push(up);
    let seenRes: http.ServerResponse | undefined;
    const results: StreamResult[] = [];
    const app = express();
    app.get('/s', async (_req, res) => {
      seenRes = res;
      const controller = new AbortController();
      res.once('close', () => controller.abort());
      const upstream = await openUpstreamStream({ url: up.url, method: 'GET', signal: controller.signal });
      results.push(await sendFlow(res, upstream.body.pipe(sseDecode()), { heartbeatMs: 1000, stallTimeoutMs: 60_000 }).done);
    });
    const gw = await listen(app);
    closers.push(gw);
    const countTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = countTimers();
    const c = await RawClient.request(gw.port, '/s');
    c.readSome(1000);
    await waitFor(() => up.sent.length === 1 && up.sent[0] > 0);
    await sleep(100);
    expect(countTimers()).toBeGreaterThan(timersBefore); // heartbeat (and stall) timers are armed
    const t0 = Date.now();
    c.destroy();
    await waitFor(() => up.aborted === 1, 2000);
    expect(up.abortedAt[0] - t0).toBeLessThan(100);
    await waitFor(() => results.length === 1);
    expect(results[0].outcome).toBe('client_closed');
    expect(getEventListeners(seenRes!, 'drain')).toHaveLength(0);
    await waitFor(() => up.activeSockets() === 0, 2000);
    // Servers keep idle keep-alive timers of their own; close them to count only ours.
    while (closers.length) await closers.pop()!.close();
    await waitFor(() => countTimers() <= timersBefore, 2000); // heartbeat and stall timers released
  });
});

export type { Flow };

describe('demand bridge: demand in bytes (maxElementBytes)', () => {
  /**
   * A route emitting 8 KiB elements as requested (up to `total`), recording every request(n),
   * to a paused client; `reserve` plays the upstream side that may still grow.
   */
  async function byteDemandRoute(options: { budget: number; elementBytes: number; total: number; reserve?: number }) {
    const requests: number[] = [];
    const results: StreamResult[] = [];
    const app = express();
    app.get('/s', (_req, res) => {
      let emitted = 0;
      const flow = createFlow<Uint8Array>((sink) => {
        sink.onRequest((n) => {
          requests.push(n);
          for (let i = 0; i < n && emitted < options.total; i++, emitted++) sink.next(Buffer.from(`data: ${'y'.repeat(options.elementBytes - 8)}\n\n`));
          if (emitted === options.total) sink.complete();
        });
      });
      const reserve = options.reserve;
      void sendFlow(res, flow, {
        maxBufferedBytes: options.budget,
        maxElementBytes: 8 * 1024,
        reserveBytes: reserve === undefined ? undefined : () => reserve,
        stallTimeoutMs: 0,
        heartbeatMs: 0,
      }).done.then((r) => results.push(r));
    });
    const gw = await listen(app);
    closers.push(gw);
    return { gw, requests, results };
  }

  it('requests only as many elements as the budget has room for, and never overflows a paused client', async () => {
    const budget = 64 * 1024;
    const { gw, requests, results } = await byteDemandRoute({ budget, elementBytes: 8 * 1024, total: 2000, reserve: 16 * 1024 });
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    await sleep(500); // the kernel buffers fill, then the budget
    expect(results).toHaveLength(0); // still paused, not overflowed
    // First request: (64 KiB − 16 KiB reserved) / (8 KiB + 12 B of chunk framing) = 5 elements,
    // not a count-based prefetch of 16.
    expect(requests[0]).toBe(5);
    c.readAll();
    expect(await c.waitClosed(20_000)).toBe(true);
    await waitFor(() => results.length === 1, 5000);
    expect(results[0]?.outcome).toBe('completed');
    expect(results[0]?.peakBufferedBytes).toBeLessThanOrEqual(budget);
    expect(c.body().match(/^data: y+$/gm)?.length).toBe(2000);
  });

  it('still requests one element when nothing is in flight: one that cannot fit beside the reserve ends the stream with overflow, never hangs it', async () => {
    // 64 KiB − 60 KiB reserved leaves no room for one 8 KiB element (an upstream side grown past
    // its nominal bound, e.g. one large event carried over).
    const { gw, requests, results } = await byteDemandRoute({ budget: 64 * 1024, elementBytes: 8 * 1024, total: 10, reserve: 60 * 1024 });
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    await waitFor(() => results.length === 1, 5000);
    expect(results[0]?.outcome).toBe('overflow');
    expect(requests).toEqual([1]);
    expect(c.body()).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_OVERFLOW"/);
  });
});

describe('demand bridge: peakBufferedBytes', () => {
  it('reports how full the budget was when an element overflowed it, the batched writes included', async () => {
    const results: StreamResult[] = [];
    const app = express();
    app.get('/s', (_req, res) => {
      // 1 KiB events, as many as asked for, in the same tick: they wait in the end-of-tick batch.
      const flow = createFlow<Uint8Array>((sink) => {
        sink.onRequest((n) => {
          for (let i = 0; i < n; i++) sink.next(Buffer.from(`data: ${'z'.repeat(1024 - 8)}\n\n`));
        });
      });
      void sendFlow(res, flow, { maxBufferedBytes: 4096, stallTimeoutMs: 0, heartbeatMs: 0 }).done.then((r) => results.push(r));
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    c.readAll();
    await waitFor(() => results.length === 1, 5000);
    expect(results[0]?.outcome).toBe('overflow');
    // The element that did not fit found more than budget − its size held.
    expect(results[0]?.peakBufferedBytes).toBeGreaterThan(4096 - 1024);
    expect(results[0]?.peakBufferedBytes).toBeLessThanOrEqual(4096);
  });
});

describe('StreamHandle#flush and onWritable', () => {
  it('flush() writes what was batched for the end of the tick at once, with the socket uncorked', async () => {
    let sink: FlowSink<Uint8Array> | undefined;
    const seen: { before: number; after: number; corked: number }[] = [];
    const app = express();
    app.get('/s', (_req, res) => {
      const writes: unknown[] = [];
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      (res as unknown as { write: (...args: unknown[]) => boolean }).write = (...args: unknown[]) => (writes.push(args[0]), write(...args));
      const handle = sendFlow(res, createFlow<Uint8Array>((s) => void (sink = s)), { heartbeatMs: 0, stallTimeoutMs: 0 });
      setTimeout(() => {
        sink?.next(Buffer.from('data: now\n\n'));
        const before = writes.length;
        handle.flush();
        seen.push({ before, after: writes.length, corked: res.socket?.writableCorked ?? -1 });
        sink?.complete();
      }, 20);
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    expect(seen).toEqual([{ before: 0, after: 1, corked: 0 }]);
    expect(c.body()).toContain('data: now\n\n');
  });

  it('calls onWritable each time it may request more', async () => {
    let calls = 0;
    let requests = 0;
    const app = express();
    app.get('/s', (_req, res) => {
      let emitted = 0;
      const flow = createFlow<Uint8Array>((sink) => {
        sink.onRequest((n) => {
          requests++;
          for (let i = 0; i < n && emitted < 100; i++, emitted++) sink.next(Buffer.from('data: x\n\n'));
          if (emitted === 100) sink.complete();
        });
      });
      sendFlow(res, flow, { heartbeatMs: 0, prefetch: 4, onWritable: () => void calls++ });
    });
    const gw = await listen(app);
    closers.push(gw);
    const c = await RawClient.request(gw.port, '/s');
    closers.push({ close: async () => c.destroy() });
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    expect(requests).toBeGreaterThan(1);
    expect(calls).toBeGreaterThanOrEqual(requests);
  });
});
