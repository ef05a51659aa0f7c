import { connectSse, type SseFetch } from '../../src/client';
import { SseBodyError, SseHttpError } from '../../src/errors';
import { sleep } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

// connectSse against WHATWG HTML §9.2 where a peer's suite found it wrong: the last event ID
// encoded as UTF-8, the reconnection time as a floor, statuses other than 200, a body that is no stream.

const serve = scriptedServers();

/** The Last-Event-ID a Node server received, read as the UTF-8 bytes on the wire. */
function lastEventIdOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const v = headers['last-event-id'];
  return typeof v === 'string' ? Buffer.from(v, 'latin1').toString('utf8') : undefined;
}

describe('connectSse and WHATWG HTML §9.2', () => {
  describe('Last-Event-ID is sent encoded as UTF-8', () => {
    it('resumes with an ID holding characters above U+00FF that the server sent', async () => {
      const id = 'évt-€-😀-42';
      const server = await serve((_req, res, i) => {
        sseHead(res);
        if (i === 0) res.write(`id: ${id}\ndata: a\n\n`, () => setTimeout(() => res.socket?.destroy(), 10));
        else res.end('data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { initialDelayMs: 1, maxAttempts: 3, isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(server.requests).toHaveLength(2);
      expect(lastEventIdOf(server.requests[1].headers)).toBe(id);
      expect(c.events.map((e) => e.lastEventId)).toEqual([id, id]);
    });

    it('sends a non-Latin-1 lastEventId option on the first request', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end('data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { lastEventId: '流-7', maxAttempts: 2, isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(server.requests).toHaveLength(1);
      expect(lastEventIdOf(server.requests[0].headers)).toBe('流-7');
    });
  });

  describe("the wait is at least the server's reconnection time", () => {
    it('never reconnects sooner than retry:, whatever the jitter draws', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i === 0 ? 'retry: 300\ndata: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays).toEqual([300]);
      expect(server.requests[1].at - server.requests[0].at).toBeGreaterThanOrEqual(290);
    });

    it('lets a retry: above maxDelayMs stand (the ceiling bounds the jitter only)', () => {
      return new Promise<void>((resolve, reject) => {
        void serve((_req, res) => {
          sseHead(res);
          res.end('retry: 60000\ndata: a\n\n');
        }).then((server) => {
          const sub = connectSse(server.url, {
            random: () => 0.5,
            maxDelayMs: 1000,
            onReconnect: (r) => {
              try {
                expect(r.delayMs).toBe(60_500);
                resolve();
              } catch (err) {
                reject(err);
              } finally {
                sub.unsubscribe();
              }
            },
          }).subscribe({ error: reject });
        }, reject);
      });
    });

    it('counts a retry: above maxRetryMs as maxRetryMs', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i === 0 ? 'retry: 3600000\ndata: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0, maxRetryMs: 50, maxDelayMs: 1000, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays).toEqual([50]);
      expect(server.requests).toHaveLength(2);
    });

    it('keeps the backoff growing after a retry: 0 (the floor is 0, the base stays initialDelayMs)', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        if (i === 0) {
          sseHead(res);
          res.end('retry: 0\ndata: a\n\n');
        } else if (i < 4) {
          res.writeHead(503).end();
        } else {
          sseHead(res);
          res.end('data: [DONE]\n\n');
        }
      });
      const c = collect(connectSse(server.url, { random: () => 0.5, initialDelayMs: 20, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays).toEqual([10, 20, 40, 80]);
      expect(server.requests).toHaveLength(5);
    });

    it("grows a 'reconnects' backoff from initialDelayMs past a retry: 0 on every connection", async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i < 4 ? `retry: 0\ndata: ${i}\n\n` : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0, initialDelayMs: 20, backoffGrowth: 'reconnects', onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays).toEqual([10, 20, 40, 80]);
    });
    it.each(['failures', 'reconnects'] as const)("waits out a retry: too large for a number instead of reconnecting at once (backoffGrowth '%s')", async (backoffGrowth) => {
      const delays: number[] = [];
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end(`retry: 1${'0'.repeat(400)}\ndata: a\n\n`);
      });
      const c = collect(connectSse(server.url, { random: () => 0, initialDelayMs: 20, backoffGrowth, onReconnect: (r) => delays.push(r.delayMs) }));
      await sleep(300);
      c.sub.cancel();
      expect(server.requests).toHaveLength(1);
      expect(delays).toHaveLength(1);
      expect(Number.isFinite(delays[0])).toBe(true);
      expect(delays[0]).toBeGreaterThanOrEqual(2 ** 31 - 1);
    });
  });

  describe('a status other than 200 fails the connection', () => {
    it.each([205, 210, 299])('fails at once on %i, even with an event stream', async (status) => {
      const server = await serve((_req, res) => {
        res.writeHead(status, { 'content-type': 'text/event-stream' });
        res.end('data: a\n\n');
      });
      const c = collect(connectSse(server.url, { initialDelayMs: 1 }));
      const { error } = await within(c.done, 3000);
      expect(error).toBeInstanceOf(SseHttpError);
      expect(error).toMatchObject({ status });
      await sleep(50);
      expect(server.requests).toHaveLength(1);
      expect(c.events).toEqual([]);
    });
  });

  describe('a response body that is not a readable stream', () => {
    it.each([
      ['a string', 'data: a\n\n'],
      ['null', null],
      ['a plain object', { chunks: [] }],
    ])('fails with SseBodyError (%s), without reconnecting', async (_name, body) => {
      let calls = 0;
      const fetch: SseFetch = async () => {
        calls++;
        return { status: 200, headers: new Headers({ 'content-type': 'text/event-stream' }), body };
      };
      const { error } = await within(collect(connectSse('http://127.0.0.1:1/sse', { fetch, initialDelayMs: 1 })).done, 3000);
      expect(error).toBeInstanceOf(SseBodyError);
      expect(error).toMatchObject({ code: 'ERR_TIDEGATE_SSE_BODY' });
      await sleep(30);
      expect(calls).toBe(1);
    });
  });
});
