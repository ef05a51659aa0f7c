import http from 'node:http';
import { connectSse } from '../../src/client';
import { sleep, waitFor } from '../harness/net';
import { isDone, pooledSockets, recordSignals, scriptedServers, sseHead, within } from './helpers';

// After a terminal event connectSse completes at once, then lets the response end on its own (the
// keep-alive socket goes back to the pool) and aborts it only if it is still open after 1 s.

const serve = scriptedServers();

const agents: http.Agent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) agent.destroy();
});

function keepAliveAgent(): http.Agent {
  const agent = new http.Agent({ keepAlive: true });
  agents.push(agent);
  return agent;
}


function refedTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/**
 * Resolves once the process holds no more refed timers than `before`, within 250 ms. The count is
 * the process's: a timer another spec file left running in this worker (a reconnect backoff)
 * comes and goes, while a refed timer of the client's would hold the count up for its whole
 * second.
 */
function noTimerAbove(before: number): Promise<void> {
  return waitFor(() => refedTimers() <= before, 250);
}


describe('connectSse', () => {
  describe('drain after a terminal event', () => {
    it('returns the keep-alive socket to the pool when the response ends with the terminal event', async () => {
      const ports: Array<number | undefined> = [];
      const server = await serve((req, res) => {
        ports.push(req.socket.remotePort);
        sseHead(res);
        res.end('data: a\n\ndata: [DONE]\n\n');
      });
      const agent = keepAliveAgent();
      const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(first.done, 2000);
      // Reused: one free socket in the pool. Aborted: the server saw its socket close.
      await waitFor(() => pooledSockets(agent.freeSockets) === 1 || server.openSockets() === 0, 2000).catch(() => undefined);
      const second = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(second.done, 2000);
      expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
      expect(second.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
      expect(ports).toHaveLength(2);
      expect(ports[1]).toBe(ports[0]);
    });

    it('returns the socket to the pool when the server ends the response shortly after the terminal event', async () => {
      const ports: Array<number | undefined> = [];
      const server = await serve((req, res) => {
        ports.push(req.socket.remotePort);
        sseHead(res);
        res.write('data: a\n\ndata: [DONE]\n\n', () => {
          const timer = setTimeout(() => res.end(), 100);
          res.on('close', () => clearTimeout(timer));
        });
      });
      const agent = keepAliveAgent();
      const first = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(first.done, 2000);
      expect(first.signals).toEqual(['next:a', 'next:[DONE]', 'complete']); // at the terminal event, not at the end
      expect(pooledSockets(agent.freeSockets)).toBe(0);
      await waitFor(() => pooledSockets(agent.freeSockets) === 1 || server.openSockets() === 0, 2000).catch(() => undefined);
      expect(pooledSockets(agent.freeSockets)).toBe(1);
      const second = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(second.done, 2000);
      expect(ports[1]).toBe(ports[0]);
    });

    it('keeps the pooled socket after the drain window: the cut timer is cleared when the body ends', async () => {
      let closed = false;
      const server = await serve((_req, res) => {
        res.socket?.on('close', () => (closed = true));
        sseHead(res);
        res.end('data: [DONE]\n\n');
      });
      const agent = keepAliveAgent();
      const timersBefore = refedTimers();
      const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(c.done, 2000);
      await waitFor(() => pooledSockets(agent.freeSockets) === 1, 2000);
      await sleep(1300); // past the 1 s cut
      expect(closed).toBe(false);
      expect(pooledSockets(agent.freeSockets)).toBe(1);
      await noTimerAbove(timersBefore);
    });

    it('aborts a response still open 1 s after the terminal event, delivering nothing more and leaving no timer', async () => {
      let closed = false;
      const server = await serve((_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        res.write('data: a\n\ndata: [DONE]\n\n', () => {
          // Unref'd: the timers counted below are the client's, whenever this one fires.
          const timer = setTimeout(() => res.write('data: late\n\n'), 100).unref();
          res.on('close', () => clearTimeout(timer));
        });
      });
      const agent = keepAliveAgent();
      const timersBefore = refedTimers();
      const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(c.done, 2000);
      expect(c.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
      await sleep(300);
      // Still draining (the late event was read and dropped), and the cut timer keeps nothing alive.
      expect(closed).toBe(false);
      await noTimerAbove(timersBefore);
      await waitFor(() => closed, 3000);
      await waitFor(() => server.openSockets() === 0, 2000);
      expect(pooledSockets(agent.sockets) + pooledSockets(agent.freeSockets)).toBe(0);
      expect(c.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
      expect(server.requests).toHaveLength(1);
    });

    it('aborts an open response after the drain window with a WHATWG body (native fetch)', async () => {
      let closed = false;
      const server = await serve((_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        res.write('data: [DONE]\n\ndata: late\n\n');
      });
      const c = recordSignals(connectSse(server.url, { fetch: globalThis.fetch, isTerminal: isDone }));
      await within(c.done, 2000);
      await waitFor(() => closed, 3000);
      expect(c.signals).toEqual(['next:[DONE]', 'complete']);
    });

    it('never delivers events that follow the terminal event in the same chunk', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: a\n\ndata: [DONE]\n\ndata: after\n\nid: 9\ndata: after2\n\n', () => res.end('data: more\n\n'));
      });
      const c = recordSignals(connectSse(server.url, { isTerminal: isDone }));
      await within(c.done, 2000);
      await sleep(100);
      expect(c.signals).toEqual(['next:a', 'next:[DONE]', 'complete']);
      expect(server.requests).toHaveLength(1);
    });

    it('signals no error and does not reconnect when the connection fails during the drain', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: [DONE]\n\ndata: late\n\n', () => {
          const timer = setTimeout(() => res.socket?.destroy(), 50);
          res.on('close', () => clearTimeout(timer));
        });
      });
      const c = recordSignals(connectSse(server.url, { initialDelayMs: 1, isTerminal: isDone }));
      await within(c.done, 2000);
      await waitFor(() => server.openSockets() === 0, 2000);
      await sleep(100);
      expect(c.signals).toEqual(['next:[DONE]', 'complete']);
      expect(server.requests).toHaveLength(1);
    });

    it('ignores a cancel after completion: the drain goes on and the socket is reused', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: [DONE]\n\n', () => {
          const timer = setTimeout(() => res.end(), 100);
          res.on('close', () => clearTimeout(timer));
        });
      });
      const agent = keepAliveAgent();
      const c = recordSignals(connectSse(server.url, { agent, isTerminal: isDone }));
      await within(c.done, 2000);
      c.cancel();
      await waitFor(() => pooledSockets(agent.freeSockets) === 1 || server.openSockets() === 0, 2000).catch(() => undefined);
      expect(pooledSockets(agent.freeSockets)).toBe(1);
      expect(c.signals).toEqual(['next:[DONE]', 'complete']);
    });

    it('still aborts at once when the subscriber cancels while handling the terminal event', async () => {
      let closed = false;
      const server = await serve((_req, res) => {
        res.on('close', () => (closed = true));
        sseHead(res);
        res.write('data: [DONE]\n\n');
      });
      const agent = keepAliveAgent();
      const signals: string[] = [];
      const sub = connectSse(server.url, { agent, isTerminal: isDone }).subscribeWithDemand({
        next: (e) => {
          signals.push(`next:${e.data}`);
          sub.cancel();
        },
        error: () => signals.push('error'),
        complete: () => signals.push('complete'),
      });
      sub.request(1);
      await waitFor(() => closed, 500); // well inside the drain window: an abort, not the cut
      expect(signals).toEqual(['next:[DONE]']);
    });
  });
});
