import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendFlow, type StreamHandle, type StreamResult } from '../../src/express/send-flow';
import { Flow } from '../../src/flow/flow';
import { fromAsyncIterable, fromIterable } from '../../src';
import type { Subscriber } from '../../src/flow/types';
import type { BridgeElement } from '../../src/express/send-flow';
import { waitFor } from '../harness/net';

/** A bare http server whose handler is set per test; closed in afterEach. */
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

function timeoutCount(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/**
 * GET over a fresh connection with node:http (no agent, no undici): the client's own keep-alive
 * timers never show up in the count, so only the bridge's timers can change it.
 */
function get(url: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { connection: 'close' } }, resolve);
    req.on('error', reject);
  });
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += chunk as string;
  return text;
}

/**
 * The process's active `Timeout` count once it fell to `most`, or after 2 s: timers the bridge
 * ends by themselves (a linger that checks the peer took the last bytes) may need a tick or two
 * on a busy machine; one left behind stays.
 */
async function timeoutsSettleTo(most: number): Promise<number> {
  const deadline = Date.now() + 2000;
  while (timeoutCount() > most && Date.now() < deadline) await settle(20);
  return timeoutCount();
}

async function settle(ms = 30): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

describe('demand bridge lifecycle', () => {
  it('leaves no heartbeat or stall timer behind after a stream completes', async () => {
    const url = await listen();
    let handle: StreamHandle | undefined;
    handler = (_req, res) => {
      handle = sendFlow(res, fromIterable([{ data: 'a' }, { data: 'b' }]), { heartbeatMs: 50, stallTimeoutMs: 200 });
    };
    await settle();
    const before = timeoutCount();
    const text = await readAll(await get(url));
    expect(text).toContain('data: b');
    await handle!.done;
    expect(await timeoutsSettleTo(before)).toBeLessThanOrEqual(before);
  });

  it("keeps the response's headers readable when it finishes, for logging middleware", async () => {
    const url = await listen();
    let finished: Record<string, unknown> | undefined;
    handler = (_req, res) => {
      res.setHeader('X-Request-Id', 'req-1');
      res.on('finish', () => (finished = { ...res.getHeaders() }));
      // The second event a while after the first: the head leaves with the first batch.
      const events = (async function* () {
        yield { data: 'a' };
        await new Promise((r) => setTimeout(r, 30));
        yield { data: 'b' };
      })();
      sendFlow(res, fromAsyncIterable(events), { heartbeatMs: 0 });
    };
    expect(await readAll(await get(url))).toContain('data: b');
    await waitFor(() => finished !== undefined);
    expect(finished).toMatchObject({ 'x-request-id': 'req-1', 'content-type': expect.stringContaining('text/event-stream') });
  });

  it('leaves no heartbeat or stall timer behind after the client disconnects mid-stream', async () => {
    const url = await listen();
    let done: Promise<StreamResult> | undefined;
    handler = (_req, res) => {
      // never completes: only the client leaving ends it
      const never = new Flow<BridgeElement>((s: Subscriber<BridgeElement>) => s.onSubscribe({ request: () => undefined, cancel: () => undefined }));
      done = sendFlow(res, never, { heartbeatMs: 20, stallTimeoutMs: 10_000 }).done;
    };
    await settle();
    const before = timeoutCount();
    const res = await get(url);
    await new Promise((r) => res.once('data', r)); // at least a heartbeat arrived
    res.destroy();
    const result = await done!;
    expect(result.outcome).toBe('client_closed');
    expect(await timeoutsSettleTo(before)).toBeLessThanOrEqual(before);
  });

  it('ignores a rogue source that emits after complete (no write after end, no crash)', async () => {
    const url = await listen();
    let done: Promise<StreamResult> | undefined;
    const errors: unknown[] = [];
    handler = (_req, res) => {
      res.on('error', (e) => errors.push(e));
      const rogue = new Flow<BridgeElement>((s: Subscriber<BridgeElement>) => {
        let sent = false;
        s.onSubscribe({
          request: () => {
            if (sent) return;
            sent = true;
            s.onNext({ data: 'one' });
            s.onComplete();
            s.onNext({ data: 'after-complete' });
            s.onError(new Error('after complete'));
            s.onComplete();
          },
          cancel: () => undefined,
        });
      });
      done = sendFlow(res, rogue, { heartbeatMs: 0 }).done;
    };
    const text = await (await fetch(url)).text();
    const result = await done!;
    expect(result.outcome).toBe('completed');
    expect(text).toContain('data: one');
    expect(text).not.toContain('after-complete');
    expect(text).not.toContain('event: error');
    expect(errors).toEqual([]);
  });

  it('refuses a second sendFlow on one response: its handle never resolves "completed" for events that cannot reach the client', async () => {
    const url = await listen();
    const second: { handle?: StreamHandle; threw?: unknown } = {};
    handler = (_req, res) => {
      sendFlow(res, fromIterable(Array.from({ length: 20 }, (_, i) => ({ data: `first-${i}` }))), { heartbeatMs: 0 });
      try {
        second.handle = sendFlow(res, fromIterable(Array.from({ length: 20 }, (_, i) => ({ data: `second-${i}` }))), { heartbeatMs: 0 });
      } catch (err) {
        second.threw = err;
      }
    };
    const text = await (await fetch(url)).text();
    // Either the second call throws, or its handle reports an error without writing a byte.
    const secondResult = second.handle ? await second.handle.done : undefined;
    expect(second.threw !== undefined || secondResult?.outcome === 'error').toBe(true);
    expect(text).not.toContain('second-');
  });
});
