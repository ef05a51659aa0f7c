import http from 'node:http';
import { connectSse } from '../../src/client';
import type { SseFetch } from '../../src/client';
import { sleep, waitFor } from '../harness/net';
import { isDone, pooledSockets, recordSignals, scriptedServers, sseHead, within } from './helpers';
import { clientEvents, post, rng, useRelayHarness } from '../harness/relay-harness';

// connectSse's drain after a terminal event. Completion is at once; the body is
// read and dropped so the keep-alive socket returns to the pool; a response still open after 1 s is
// aborted. Nothing may be delivered or signalled after completion, and a pooled socket must never be
// handed on half-read.

const serve = scriptedServers();
const agents: http.Agent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) agent.destroy();
});

function keepAliveAgent(maxSockets = Infinity): http.Agent {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  agents.push(agent);
  return agent;
}




/** Once the first stream's socket is back in `agent`'s pool: a second stream on it, run to its end. */
async function nextStreamOnPooledSocket(url: string, agent: http.Agent): Promise<ReturnType<typeof recordSignals>> {
  await waitFor(() => pooledSockets(agent.freeSockets) === 1, 2000);
  const second = recordSignals(connectSse(url, { agent, isTerminal: isDone }));
  await within(second.done, 2000);
  return second;
}

describe('connectSse drain after a terminal event', () => {
  it('an oversized line right after the terminal event in the same chunk: no SseLimitError, and the socket is still reused', async () => {
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      res.end(`data: a\n\ndata: [DONE]\n\ndata: ${'x'.repeat(4096)}\n\n`);
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone, maxLineBytes: 256 }));
    await within(first.done, 2000);
    await waitFor(() => pooledSockets(agent.freeSockets) === 1 || server.openSockets() === 0, 2500).catch(() => undefined);
    const second = recordSignals(connectSse(server.url, { agent, isTerminal: isDone, maxLineBytes: 256 }));
    await within(second.done, 2000);
    await sleep(50);
    expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(second.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it('a malformed line and invalid UTF-8 after the terminal event in the same chunk are dropped silently; socket reused', async () => {
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      res.end(Buffer.concat([Buffer.from('data: [DONE]\n\n:\x00garbage\nnocolon\ndata: '), Buffer.from([0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80]), Buffer.from('\n\n')]));
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
    await within(first.done, 2000);
    await nextStreamOnPooledSocket(server.url, agent);
    expect(first.signals).toEqual(['next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it.each([1, 2, 5, 7, 10, 13])('the terminal event split across reads (cut at byte %i of "data: [DONE]\\n\\n"): delivered once, socket reused', async (cut) => {
    const ports: Array<number | undefined> = [];
    const frame = 'data: [DONE]\n\n';
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      res.write(`data: a\n\n${frame.slice(0, cut)}`, () => {
        const t = setTimeout(() => res.end(`${frame.slice(cut)}data: after\n\n`), 20);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
    await within(first.done, 2000);
    await nextStreamOnPooledSocket(server.url, agent);
    expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it('a terminal event held in the decoder for want of demand: delivered on request(1), then the drain reuses the socket', async () => {
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      res.write('data: a\n\ndata: [DONE]\n\n', () => {
        const t = setTimeout(() => res.end('data: tail\n\n'), 50);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }), 1);
    await waitFor(() => first.signals.length === 1, 2000);
    await sleep(150);
    expect(first.signals).toEqual(['next:a']);
    first.request(1);
    await within(first.done, 2000);
    await nextStreamOnPooledSocket(server.url, agent);
    expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it('a terminal event held for want of demand after the body already ended: delivered, completes, socket reused', async () => {
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      res.end('data: a\n\ndata: [DONE]\n\n');
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }), 1);
    await waitFor(() => first.signals.length === 1, 2000);
    await sleep(150);
    first.request(1);
    await within(first.done, 2000);
    await nextStreamOnPooledSocket(server.url, agent);
    expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it('a server that resets during the drain: no error, and the next stream on the same agent gets a fresh, intact response', async () => {
    const server = await serve((_req, res, index) => {
      sseHead(res);
      if (index === 0) {
        res.write('data: [DONE]\n\ndata: late\n\n', () => {
          const t = setTimeout(() => res.socket?.resetAndDestroy(), 50);
          res.on('close', () => clearTimeout(t));
        });
        return;
      }
      res.end(`data: second-${index}\n\ndata: [DONE]\n\n`);
    });
    const agent = keepAliveAgent(1);
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
    await within(first.done, 2000);
    await waitFor(() => server.openSockets() === 0, 2000);
    const second = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
    await within(second.done, 2000);
    expect(first.signals).toEqual(['next:[DONE]', 'complete']);
    expect(second.signals).toEqual(['next:second-1', 'next:[DONE]', 'complete']);
  });

  it('a gzip response (node-fetch inflates it): the drain reads the compressed tail to its end and the socket is reused', async () => {
    const zlib = await import('node:zlib');
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res) => {
      ports.push(req.socket.remotePort);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      const gz = zlib.createGzip({ flush: zlib.constants.Z_SYNC_FLUSH });
      gz.pipe(res);
      gz.write('data: a\n\ndata: [DONE]\n\n');
      const t = setTimeout(() => gz.end(`data: ${'z'.repeat(50_000)}\n\n`), 30);
      res.on('close', () => clearTimeout(t));
    });
    const agent = keepAliveAgent();
    const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
    await within(first.done, 2000);
    const second = await nextStreamOnPooledSocket(server.url, agent);
    expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(second.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(ports[1]).toBe(ports[0]);
  });

  it('reconnect: true, the terminal event on the reconnected connection: completes, drains, reuses', async () => {
    const ports: Array<number | undefined> = [];
    const server = await serve((req, res, index) => {
      ports.push(req.socket.remotePort);
      sseHead(res);
      if (index === 0) return void res.end('id: 1\ndata: a\n\n'); // EOF without the terminal: reconnect
      res.write('data: [DONE]\n\n', () => {
        const t = setTimeout(() => res.end('data: tail\n\n'), 30);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent();
    const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone, reconnect: true, initialDelayMs: 1, maxDelayMs: 5 }));
    await within(c.done, 3000);
    await waitFor(() => pooledSockets(agent.freeSockets) === 1, 2000);
    await sleep(50);
    expect(c.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.headers['last-event-id']).toBe('1');
  });

  it('a signal aborted during the drain neither errors nor cuts the drain short', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.write('data: [DONE]\n\n', () => {
        const t = setTimeout(() => res.end('data: tail\n\n'), 100);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent();
    const ac = new AbortController();
    const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone, signal: ac.signal }));
    await within(c.done, 2000);
    ac.abort(new Error('late abort'));
    await waitFor(() => pooledSockets(agent.freeSockets) === 1, 2000);
    expect(c.signals).toEqual(['next:[DONE]', 'complete']);
  });

  it('a server that never ends: the 1 s cut destroys the socket and leaves nothing keeping the process alive', async () => {
    const baseline = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    const timers: NodeJS.Timeout[] = [];
    let closed = false;
    const server = await serve((_req, res) => {
      res.on('close', () => (closed = true));
      sseHead(res);
      res.write('data: [DONE]\n\n');
      const t = setInterval(() => res.write(': ping\n\n'), 50);
      timers.push(t);
      res.on('close', () => clearInterval(t));
    });
    const agent = keepAliveAgent();
    for (const fetchImpl of [undefined, globalThis.fetch as unknown as SseFetch]) {
      closed = false;
      const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone, ...(fetchImpl ? { fetch: fetchImpl } : {}) }));
      await within(c.done, 2000);
      await waitFor(() => closed, 3000);
      expect(c.signals).toEqual(['next:[DONE]', 'complete']);
    }
    for (const t of timers) clearInterval(t);
    await waitFor(() => server.openSockets() === 0, 3000);
    // The client's own sockets are gone too (the server's listener is the only TCP handle left of this test).
    await waitFor(() => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length <= baseline, 3000);
  });

  it.each(['node-fetch', 'native fetch'])('40 streams over one 4-socket keep-alive agent (%s), random tails after the terminal: every response intact', async (kind) => {
    const rand = rng(9);
    const plans = Array.from({ length: 40 }, (_, i) => ({
      events: Array.from({ length: 1 + Math.floor(rand() * 20) }, (_, k) => `s${i}-e${k}-${'p'.repeat(Math.floor(rand() * 3000))}`),
      tail: `data: tail-${i}-${'t'.repeat(Math.floor(rand() * 20000))}\n\n`.repeat(1 + Math.floor(rand() * 3)),
      delay: Math.floor(rand() * 60),
    }));
    const server = await serve((req, res) => {
      const i = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('i'));
      const plan = plans[i];
      if (plan === undefined) return void res.writeHead(404).end();
      sseHead(res);
      res.write(plan.events.map((e) => `data: ${e}\n\n`).join('') + 'data: [DONE]\n\n' + plan.tail.slice(0, 100), () => {
        const t = setTimeout(() => res.end(plan.tail.slice(100)), plan.delay);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent(4);
    const opts = kind === 'native fetch' ? { fetch: globalThis.fetch as unknown as SseFetch } : { agent };
    const runs = plans.map((_, i) => recordSignals(connectSse(`${server.url}?i=${i}`, { ...opts, isTerminal: isDone })));
    await within(Promise.all(runs.map((r) => r.done)), 15_000, '40 streams');
    runs.forEach((r, i) => expect(r.signals).toEqual([...(plans[i]?.events ?? []).map((e) => `next:${e}`), 'next:[DONE]', 'complete']));
    if (kind === 'node-fetch') expect(server.openSockets()).toBeLessThanOrEqual(4);
  });
  it('12 streams over one 2-socket agent, every third one cut by the 1 s timer: the others reuse sockets, every response intact', async () => {
    const server = await serve((req, res) => {
      const i = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('i'));
      sseHead(res);
      res.write(`data: s${i}\n\ndata: [DONE]\n\ndata: tail\n\n`, () => {
        const t = setTimeout(() => res.end(`data: end-${i}\n\n`), i % 3 === 0 ? 1500 : 10);
        res.on('close', () => clearTimeout(t));
      });
    });
    const agent = keepAliveAgent(2);
    const runs = Array.from({ length: 12 }, (_, i) => recordSignals(connectSse(`${server.url}?i=${i}`, { agent, isTerminal: isDone })));
    await within(Promise.all(runs.map((r) => r.done)), 10_000, '12 streams');
    runs.forEach((r, i) => expect(r.signals).toEqual([`next:s${i}`, 'next:[DONE]', 'complete']));
    await waitFor(() => pooledSockets(agent.sockets) === 0, 3000);
  });
});

describe('resumable gateway route with an upstream that never ends after the terminator', () => {
  const h = useRelayHarness((url) => [
    { path: '/res', provider: 'passthrough', url: `${url}/u`, forwardHeaders: ['x-script'], resumable: true, terminator: { data: 'bye' }, retry: { maxAttempts: 2 } },
  ]);

  it('ends the client response at the terminator at once, cuts the upstream link within ~1 s, and logs completed', async () => {
    h.up.scripts.set('forever', () => ['data: a\n\ndata: bye\n\n', ...Array.from({ length: 100 }, () => [50, ': ping\n\n']).flat()]);
    const before = h.up.aborted;
    const reply = await post(`${h.gw.url}/res`, { 'x-script': 'forever' }, 'x');
    const abortedAtReply = h.up.aborted;
    expect(reply.status).toBe(200);
    expect(reply.aborted).toBe(false);
    expect(clientEvents(reply.body).map((e) => e.data)).toEqual(['a', 'bye']);
    expect(abortedAtReply).toBe(before); // the client's response ended before the drain's cut: not held open by it
    await waitFor(() => h.up.aborted === before + 1, 3000);
    expect(h.up.sockets.size).toBe(0);
    await waitFor(() => h.logs.streams().length > 0, 2000);
    expect(h.logs.streams().at(-1)).toMatchObject({ route: '/res', outcome: 'completed' });
  });
});

describe('connectSse callbacks after the terminal event', () => {
  // sseDecode goes on parsing the rest of the chunk that held the terminal event (the decoder is
  // not cancelled, and cancelling would not stop the chunk in hand), so connect-sse.ts guards the
  // user's onComment (and onRetry) with the generation, as it does onLastEventId: none of them
  // runs after `complete`.
  it('calls onComment for no comment that follows the terminal event in the same chunk', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.end(': before\n\ndata: [DONE]\n\n: after-in-same-chunk\n\n');
    });
    const seen: string[] = [];
    const flow = connectSse(server.url, { isTerminal: isDone, onComment: (c) => seen.push(`comment:${c}`) });
    const sub = flow.subscribeWithDemand({
      next: (e) => seen.push(`next:${e.data}`),
      error: (err) => seen.push(`error:${String(err)}`),
      complete: () => seen.push('complete'),
    });
    sub.request(Infinity);
    await waitFor(() => seen.includes('complete'), 2000);
    await sleep(100);
    expect(seen).toEqual(['comment:before', 'next:[DONE]', 'complete']);
  });
});
