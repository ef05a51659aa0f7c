import { getEventListeners } from 'node:events';
import { readdirSync } from 'node:fs';
import { connectSse, defaultSseAgent } from '../../src/client';
import { sleep, waitFor } from '../harness/net';
import { collect, scriptedServer, sseHead, within } from './helpers';

// Its own file, so the fd baseline is not disturbed by other tests' sockets closing late.

const isDone = (e: { data: string }): boolean => e.data === '[DONE]';

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

function activeResources(kind: string): number {
  return process.getActiveResourcesInfo().filter((r) => r === kind).length;
}

/** Runs `cycles` reconnects against a fresh server, then closes it. */
async function reconnectCycles(cycles: number, signal: AbortSignal): Promise<{ events: number; reconnects: number; ids: number; url: string }> {
  const server = await scriptedServer((_req, res, i) => {
    sseHead(res);
    if (i >= cycles) {
      res.end('data: [DONE]\n\n');
      return;
    }
    const frame = `id: ${i}\ndata: x\n\n`;
    // Three ways a connection ends: the server drops TCP, the server ends the response (the
    // socket goes back to the keep-alive pool), the client gives up on a silent server (abort).
    if (i % 20 === 19) res.write(frame);
    else if (i % 2 === 0) res.write(frame, () => res.socket?.destroy());
    else res.end(frame);
  });
  try {
    let reconnects = 0;
    const c = collect(
      connectSse(server.url, { initialDelayMs: 1, maxDelayMs: 1, idleTimeoutMs: 100, signal, isTerminal: isDone, onReconnect: () => reconnects++ }),
    );
    // ~8 s alone; a generous bound for a loaded 2-core machine (the test is about leaks, not speed).
    expect(await within(c.done, 60_000, `${cycles} cycles`)).toEqual({});
    // Before the server closes anything itself: only the keep-alive socket of the last response may remain.
    await waitFor(() => server.openSockets() <= 1, 3000).catch(() => undefined);
    expect(server.openSockets()).toBeLessThanOrEqual(1);
    return { events: c.events.length, reconnects, ids: new Set(c.events.map((e) => e.lastEventId)).size, url: server.url };
  } finally {
    await server.close();
  }
}

/** Waits until the fd count stops changing (bounded: 30 polls of 50 ms). */
async function settledFds(): Promise<number> {
  let last = openFds();
  for (let i = 0, stable = 0; i < 30 && stable < 3; i++) {
    await sleep(50);
    const now = openFds();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return last;
}

describe('connectSse resource release', () => {
  it('leaves no open sockets, timers or listeners after 1,000 reconnect cycles', async () => {
    const controller = new AbortController();
    await reconnectCycles(5, controller.signal); // warm-up: lazily created handles are not leaks
    const fdsBefore = await settledFds();
    const timersBefore = activeResources('Timeout');

    const run = await reconnectCycles(1000, controller.signal);
    expect(run.reconnects).toBe(1000);
    expect(run.events).toBe(1001);
    expect(run.ids).toBe(1000); // ids 0..999, the [DONE] keeps 999: each event once

    await waitFor(() => openFds() <= fdsBefore, 3000);
    expect(openFds()).toBe(fdsBefore);
    const agent = defaultSseAgent(new URL(run.url));
    await waitFor(() => Object.keys(agent.sockets).length + Object.keys(agent.freeSockets).length === 0, 3000);
    expect(activeResources('TCPSocketWrap')).toBe(0);
    // A timer of the last cycle may still be on its way out when the sockets are gone.
    await waitFor(() => activeResources('Timeout') <= timersBefore, 3000);
    expect(activeResources('Timeout')).toBeLessThanOrEqual(timersBefore);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  }, 90_000);
});
