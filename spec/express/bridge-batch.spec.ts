/**
 * The bridge's batch is `undefined` when empty, created on the first
 * write of a tick (src/express/send-flow.ts). Re-entrant writes, flush() with nothing
 * pending, finish() with a pending batch, the writev path and exactly one element, the retry
 * hint at commit, and demand in bytes with nothing in flight, over real sockets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendFlow, type BridgeElement, type StreamHandle, type StreamResult } from '../../src/express/send-flow';
import { Flow } from '../../src/flow/flow';
import { fromIterable } from '../../src';
import type { Subscriber } from '../../src/flow/types';
import { SseFrame } from '../../src/sse';

let server: http.Server | undefined;
let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = () => undefined;

async function listen(): Promise<string> {
  server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((r) => server!.close(() => r()));
  server = undefined;
});

/** GETs `url` and returns the whole body as bytes (bounded: 10 s). */
function getBody(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve(Buffer.concat(parts)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('client timeout')));
  });
}

/** A hand-driven source: `emit` delivers synchronously (within demand), records requests. */
class Source {
  demand = 0;
  cancelled = false;
  sub: Subscriber<BridgeElement> | undefined;
  readonly flow = new Flow<BridgeElement>((s: Subscriber<BridgeElement>) => {
    this.sub = s;
    s.onSubscribe({ request: (n) => void (this.demand += n), cancel: () => void (this.cancelled = true) });
  });
  emit(e: BridgeElement): void {
    this.demand--;
    this.sub?.onNext(e);
  }
}

/** Serves one stream per request with `start(res)` and returns its handle's result and the client's body. */
async function run(start: (res: http.ServerResponse) => StreamHandle): Promise<{ body: string; raw: Buffer; result: StreamResult }> {
  const url = await listen();
  let handle: StreamHandle | undefined;
  handler = (_req, res) => {
    handle = start(res);
  };
  const raw = await getBody(url);
  const result = await (handle as StreamHandle).done;
  return { body: raw.toString('utf8'), raw, result };
}

const frame = (i: number, size: number): SseFrame => {
  const head = `data: ${i} `;
  return new SseFrame(Buffer.from(`${head}${'x'.repeat(size - head.length - 2)}\n\n`));
};

describe('bridge batch, created on the first write of a tick', () => {
  it('sends the retry hint on a flow that completes at subscription, before any request', async () => {
    // The flow completes inside subscribeWith, so finish('completed') runs before start()'s
    // commit: the hint that commit() writes must still reach the client ahead of the terminal
    // event, not sit in a batch that nothing flushes once the stream is finished.
    const { body, result } = await run((res) => sendFlow(res, fromIterable<BridgeElement>([]), { retryMs: 3000, heartbeatMs: 0, terminalEvent: { data: '[DONE]' } }));
    expect(result.outcome).toBe('completed');
    expect(body).toBe('retry: 3000\n\ndata: [DONE]\n\n');
  });

  it('leaves no heartbeat timer behind on a flow that completes at subscription', async () => {
    // commit(), called from finish() (outcome completed, headers not sent), must not arm the
    // heartbeat after finish() cleared it: a heartbeatMs timer (default 15 s) would hold the
    // bridge and its response.
    const armed: NodeJS.Timeout[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const spy = jest.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const t = realSetTimeout(fn, ms);
      if ((new Error().stack ?? '').includes('Heartbeat.arm')) armed.push(t);
      return t;
    }) as typeof setTimeout);
    try {
      for (const flow of [fromIterable<BridgeElement>([{ data: 'a' }]), fromIterable<BridgeElement>([])]) {
        const { result } = await run((res) => sendFlow(res, flow, { heartbeatMs: 60_000 }));
        expect(result.outcome).toBe('completed');
        server!.closeAllConnections();
        await new Promise<void>((r) => server!.close(() => r()));
        server = undefined;
      }
    } finally {
      spy.mockRestore();
    }
    // A pending timer is neither fired nor cleared (Node marks both `_destroyed`).
    const live = armed.filter((t) => !(t as unknown as { _destroyed: boolean })._destroyed);
    expect(armed.length).toBeGreaterThan(0);
    for (const t of armed) clearTimeout(t);
    expect(live.length).toBe(0);
  });

  it('writes the retry hint then the elements of a synchronous source, in order', async () => {
    const { body } = await run((res) => sendFlow(res, fromIterable<BridgeElement>([{ data: 'a' }, { data: 'b' }]), { retryMs: 10, heartbeatMs: 0 }));
    expect(body).toBe('retry: 10\n\ndata: a\n\ndata: b\n\n');
  });

  it('sends exactly one element of a tick (no concat) and many large ones in one tick (writev), every byte in order', async () => {
    const one = frame(0, 5000);
    const many = Array.from({ length: 40 }, (_, i) => frame(i + 1, 1024 + i * 37));
    const small = Array.from({ length: 30 }, (_, i) => frame(100 + i, 20 + i));
    const src = new Source();
    const { raw, result } = await run((res) => {
      const h = sendFlow(res, src.flow, { prefetch: 64, heartbeatMs: 0, maxBufferedBytes: 1 << 20 });
      src.emit(one);
      setImmediate(() => {
        for (const f of many) src.emit(f);
        setImmediate(() => {
          for (const f of small) src.emit(f);
          // One large among small (average below COPY_BELOW_BYTES): copied together.
          src.emit(frame(999, 3000));
          setImmediate(() => src.sub?.onComplete());
        });
      });
      return h;
    });
    expect(result.outcome).toBe('completed');
    const expected = Buffer.concat([one, ...many, ...small, frame(999, 3000)].map((f) => f.bytes));
    expect(raw.equals(expected)).toBe(true);
    expect(result.events).toBe(1 + many.length + small.length + 1);
  });

  it('flush() with nothing pending is a no-op; flush() mid-tick sends what is batched and later writes still go', async () => {
    const src = new Source();
    let handle: StreamHandle | undefined;
    const { body, result } = await run((res) => {
      handle = sendFlow(res, src.flow, { heartbeatMs: 0 });
      handle.flush();
      handle.flush();
      src.emit({ data: 'a' });
      handle.flush();
      handle.flush();
      src.emit({ data: 'b' });
      src.emit({ data: 'c' });
      handle.flush();
      src.emit({ data: 'd' });
      process.nextTick(() => {
        handle?.flush();
        src.emit({ data: 'e' });
        setImmediate(() => src.sub?.onComplete());
      });
      return handle;
    });
    expect(result.outcome).toBe('completed');
    expect(body).toBe('data: a\n\ndata: b\n\ndata: c\n\ndata: d\n\ndata: e\n\n');
  });

  it('elements emitted from onWritable (re-entering write() from inside the flush and the write callback) all arrive, in order', async () => {
    const src = new Source();
    let n = 0;
    let ended = false;
    const total = 200;
    const pump = (): void => {
      while (src.demand > 0 && n < total) src.emit({ data: String(n++) });
      if (n === total && !ended) {
        ended = true;
        queueMicrotask(() => src.sub?.onComplete());
      }
    };
    const { body, result } = await run((res) => {
      // Called from request() inside flushBatch and from the write callback: emits what is requested, re-entrantly.
      const h = sendFlow(res, src.flow, { heartbeatMs: 0, prefetch: 4, onWritable: pump });
      // The first request (after start's onWritable) is answered here; later ones re-entrantly.
      setImmediate(pump);
      return h;
    });
    expect(result.outcome).toBe('completed');
    const expected = Array.from({ length: total }, (_, i) => `data: ${i}\n\n`).join('');
    expect(body).toBe(expected);
  });

  it.each([
    ['completed', (s: Source) => s.sub?.onComplete(), 'data: a\n\ndata: b\n\ndata: [DONE]\n\n'],
    ['error', (s: Source) => s.sub?.onError(Object.assign(new Error('boom'), { code: 'ERR_X' })), 'data: a\n\ndata: b\n\nevent: error\ndata: {"code":"ERR_X","message":"boom"}\n\n'],
  ] as const)('finish(%s) with a batch pending in the same tick sends the batch, then the tail', async (outcome, end, expected) => {
    const src = new Source();
    const { body, result } = await run((res) => {
      const h = sendFlow(res, src.flow, { heartbeatMs: 0, terminalEvent: { data: '[DONE]' } });
      setImmediate(() => {
        src.emit({ data: 'a' });
        src.emit({ data: 'b' });
        end(src);
      });
      return h;
    });
    expect(result.outcome).toBe(outcome);
    expect(body).toBe(expected);
  });

  it('finish(overflow) with a batch pending sends the batch, then the overflow error event', async () => {
    const src = new Source();
    const { body, result } = await run((res) => {
      const h = sendFlow(res, src.flow, { heartbeatMs: 0, prefetch: 16, maxBufferedBytes: 4000 });
      setImmediate(() => {
        for (let i = 0; i < 10 && !src.cancelled; i++) src.emit({ data: `${i}`.padEnd(990, '.') });
      });
      return h;
    });
    expect(result.outcome).toBe('overflow');
    expect(src.cancelled).toBe(true);
    const events = body.split('\n\n').filter((e) => e.length > 0);
    expect(events.slice(0, -1).every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.length).toBeGreaterThan(1);
    expect(events[events.length - 1]).toContain('ERR_TIDEGATE_OVERFLOW');
  });

  it('demand in bytes: with nothing in flight and no room it still asks for one element (no hang), then overflows or goes on', async () => {
    const src = new Source();
    const requests: number[] = [];
    const { result } = await run((res) => {
      const budget = 40_000;
      const h = sendFlow(res, src.flow, {
        heartbeatMs: 0,
        prefetch: 8,
        maxBufferedBytes: budget,
        maxElementBytes: 8000,
        // A reserve that leaves no room for even one element: the liveness branch (n = 1).
        reserveBytes: () => budget - 5000,
      });
      const pump = (): void => {
        requests.push(src.demand);
        if (src.demand > 0 && !src.cancelled) src.emit(frame(requests.length, 1000));
        if (requests.length < 20 && !src.cancelled) setImmediate(pump);
        else if (!src.cancelled) src.sub?.onComplete();
      };
      setImmediate(pump);
      return h;
    });
    // Never stuck with demand 0 while nothing is in flight.
    expect(requests.filter((d) => d > 0).length).toBeGreaterThan(10);
    expect(['completed', 'overflow']).toContain(result.outcome);
  });

  it('a client that closes with a batch pending ends client_closed, the batch dropped, the source cancelled', async () => {
    const src = new Source();
    const url = await listen();
    let handle: StreamHandle | undefined;
    let req: http.ClientRequest | undefined;
    handler = (_req, res) => {
      handle = sendFlow(res, src.flow, { heartbeatMs: 0 });
      res.on('close', () => undefined);
    };
    await new Promise<void>((resolve) => {
      req = http.get(url, { agent: false }, (r) => {
        r.once('data', () => resolve());
        r.on('error', () => undefined);
      });
      req.on('error', () => undefined);
      setTimeout(() => src.emit({ data: 'first' }), 10);
    });
    req?.destroy();
    await new Promise((r) => setTimeout(r, 20));
    src.emit({ data: 'late-1' });
    src.emit({ data: 'late-2' });
    const result = await handle!.done;
    expect(result.outcome).toBe('client_closed');
    expect(src.cancelled).toBe(true);
  });
});
