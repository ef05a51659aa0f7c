import { getEventListeners } from 'node:events';
import { connectSse, type SseReconnectInfo } from '../../src/client';
import type { SseEvent } from '../../src/sse';
import { SseConnectionError, SseHttpError, SseLimitError, TimeoutError } from '../../src/errors';
import { sleep, waitFor } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

const serve = scriptedServers();

describe('connectSse', () => {
  describe('streaming', () => {
    it('delivers events only as requested', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end('data: 1\n\ndata: 2\n\ndata: 3\n\ndata: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { isTerminal: isDone }), 1);
      await waitFor(() => c.events.length === 1, 2000);
      await sleep(50);
      expect(c.events.map((e) => e.data)).toEqual(['1']);
      c.sub.request(10);
      expect(await within(c.done, 2000)).toEqual({});
      expect(c.events.map((e) => e.data)).toEqual(['1', '2', '3', '[DONE]']);
    });

    it('works with plain RxJS subscribe (unbounded demand)', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end(': ping\n\nevent: delta\ndata: a\n\ndata: [DONE]\n\n');
      });
      const events: SseEvent[] = [];
      await within(
        new Promise<void>((resolve, reject) => {
          connectSse(server.url, { isTerminal: isDone }).subscribe({ next: (e) => events.push(e), error: reject, complete: resolve });
        }),
        2000,
      );
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['delta', 'a'],
        ['message', '[DONE]'],
      ]);
    });

    it('sends method, headers and body, and asks for an uncompressed event stream', async () => {
      let body = '';
      const server = await serve((req, res) => {
        req.setEncoding('utf8');
        req.on('data', (c: string) => (body += c));
        req.on('end', () => {
          sseHead(res);
          res.end('data: [DONE]\n\n');
        });
      });
      const c = collect(connectSse(server.url, { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"q":1}', isTerminal: isDone }));
      await within(c.done, 2000);
      const seen = server.requests[0];
      expect(seen.method).toBe('POST');
      expect(seen.headers.authorization).toBe('Bearer k');
      expect(seen.headers.accept).toBe('text/event-stream');
      expect(seen.headers['accept-encoding']).toBe('identity');
      expect(seen.headers['last-event-id']).toBeUndefined();
      expect(body).toBe('{"q":1}');
    });

    it('accepts a native fetch (WHATWG ReadableStream body) with the same demand', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end('data: 1\n\ndata: 2\n\ndata: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { fetch: globalThis.fetch, isTerminal: isDone }), 1);
      await waitFor(() => c.events.length === 1, 2000);
      await sleep(30);
      expect(c.events).toHaveLength(1);
      c.sub.request(5);
      expect(await within(c.done, 2000)).toEqual({});
      expect(c.events.map((e) => e.data)).toEqual(['1', '2', '[DONE]']);
    });

    it('completes on EOF when reconnect is false', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end('data: only\n\n');
      });
      const c = collect(connectSse(server.url, { reconnect: false }));
      expect(await within(c.done, 2000)).toEqual({});
      expect(c.events.map((e) => e.data)).toEqual(['only']);
      expect(server.requests).toHaveLength(1);
    });
  });

  describe('reconnection', () => {
    it('reconnects after a TCP drop mid-event: partial discarded, Last-Event-ID sent, later events once each', async () => {
      const server = await serve((_req, res, i) => {
        sseHead(res);
        if (i === 0) {
          res.write('id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: part', () => {
            setTimeout(() => res.socket?.destroy(), 20);
          });
        } else {
          res.end('data: c\n\nid: 4\ndata: d\n\ndata: [DONE]\n\n');
        }
      });
      const c = collect(connectSse(server.url, { initialDelayMs: 20, isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(c.events.map((e) => e.data)).toEqual(['a', 'b', 'c', 'd', '[DONE]']);
      expect(server.requests).toHaveLength(2);
      expect(server.requests[1].headers['last-event-id']).toBe('2');
      // The new connection keeps the resumed ID until the server sends another (as EventSource does).
      expect(c.events.map((e) => e.lastEventId)).toEqual(['1', '2', '2', '4', '4']);
    });

    it('reconnects after a clean EOF without a terminal event', async () => {
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i === 0 ? 'id: x\ndata: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { initialDelayMs: 10, isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(server.requests[1].headers['last-event-id']).toBe('x');
    });

    it("starts the backoff from a server's retry: above initialDelayMs", async () => {
      const delays: SseReconnectInfo[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i === 0 ? 'retry: 50\ndata: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0.5, initialDelayMs: 20, onReconnect: (r) => delays.push(r), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays.map((d) => d.delayMs)).toEqual([75]); // retry: 50, then jitter 0.5 * 50 (not 0.5 * initialDelayMs, 20)
      const gap = server.requests[1].at - server.requests[0].at;
      expect(gap).toBeGreaterThanOrEqual(20);
    });

    it('uses initialDelayMs when the server sent no retry:', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        res.end(i === 0 ? 'data: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0.5, initialDelayMs: 40, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      await within(c.done, 3000);
      expect(delays).toEqual([20]);
    });

    it('grows the backoff window while attempts keep failing, and resets it after an event', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        if (i < 3) {
          res.socket?.destroy();
          return;
        }
        sseHead(res);
        res.end(i === 3 ? 'data: a\n\n' : 'data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0.999, initialDelayMs: 10, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(delays).toEqual([9, 19, 39, 9]);
    });

    it('fails with SseConnectionError after maxAttempts failures in a row', async () => {
      const server = await serve((_req, res) => res.socket?.destroy());
      const c = collect(connectSse(server.url, { maxAttempts: 3, initialDelayMs: 5 }));
      const { error } = await within(c.done, 3000);
      expect(error).toBeInstanceOf(SseConnectionError);
      expect((error as SseConnectionError).attempts).toBe(3);
      expect((error as SseConnectionError).cause).toBeDefined();
      expect(server.requests).toHaveLength(3);
    });

    it('fails at once on a network error when reconnect is false', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: a\n\n', () => setTimeout(() => res.socket?.destroy(), 10));
      });
      const c = collect(connectSse(server.url, { reconnect: false }));
      const { error } = await within(c.done, 3000);
      expect(error).toBeInstanceOf(SseConnectionError);
      expect(c.events.map((e) => e.data)).toEqual(['a']);
      expect(server.requests).toHaveLength(1);
    });
  });

  describe('HTTP status', () => {
    it('honours Retry-After on 429 (waits about a second)', async () => {
      const server = await serve((_req, res, i) => {
        if (i === 0) {
          res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
          res.end('{"error":"slow down"}');
          return;
        }
        sseHead(res);
        res.end('data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0, isTerminal: isDone }));
      expect(await within(c.done, 5000)).toEqual({});
      const gap = server.requests[1].at - server.requests[0].at;
      expect(gap).toBeGreaterThanOrEqual(900);
      expect(gap).toBeLessThan(4000);
    });

    it('honours Retry-After on 503', async () => {
      const delays: number[] = [];
      const server = await serve((_req, res, i) => {
        if (i === 0) {
          res.writeHead(503, { 'retry-after': '1' });
          res.end('busy');
          return;
        }
        sseHead(res);
        res.end('data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { random: () => 0, onReconnect: (r) => delays.push(r.delayMs), isTerminal: isDone }));
      expect(await within(c.done, 5000)).toEqual({});
      expect(delays).toEqual([1000]);
    });

    it('fails at once on 401 with the status and the body', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end('{"error":"bad key"}');
      });
      const c = collect(connectSse(server.url));
      const { error } = await within(c.done, 2000);
      expect(error).toBeInstanceOf(SseHttpError);
      expect(error).toMatchObject({ code: 'ERR_TIDEGATE_SSE_HTTP', status: 401, body: '{"error":"bad key"}', contentType: 'application/json' });
      await sleep(50);
      expect(server.requests).toHaveLength(1);
    });

    it('fails at once on a 200 that is not text/event-stream', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>login</html>');
      });
      const { error } = await within(collect(connectSse(server.url)).done, 2000);
      expect(error).toMatchObject({ status: 200, body: '<html>login</html>', contentType: 'text/html' });
      expect(server.requests).toHaveLength(1);
    });

    it('caps the error body it keeps', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end('x'.repeat(100_000));
      });
      const { error } = await within(collect(connectSse(server.url, { maxErrorBodyBytes: 1000 })).done, 2000);
      expect((error as SseHttpError).body).toHaveLength(1000);
    });

    it('completes on 204 and stops reconnecting', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(204);
        res.end();
      });
      const c = collect(connectSse(server.url, { initialDelayMs: 1 }));
      expect(await within(c.done, 2000)).toEqual({});
      await sleep(50);
      expect(server.requests).toHaveLength(1);
      expect(c.events).toEqual([]);
    });
  });

  describe('idle timeout', () => {
    it('treats a silent connection (no bytes, no heartbeats) as a network error and reconnects', async () => {
      const reasons: unknown[] = [];
      const server = await serve((_req, res, i) => {
        sseHead(res);
        if (i === 0) res.write('id: 7\ndata: a\n\n'); // then silence
        else res.end('data: [DONE]\n\n');
      });
      const c = collect(connectSse(server.url, { idleTimeoutMs: 150, initialDelayMs: 5, onReconnect: (r) => reasons.push(r.error), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(reasons).toHaveLength(1);
      expect(reasons[0]).toBeInstanceOf(TimeoutError);
      expect(server.requests[1].headers['last-event-id']).toBe('7');
    });

    it('counts heartbeat comments as liveness', async () => {
      let timer: NodeJS.Timeout | undefined;
      const server = await serve((_req, res) => {
        sseHead(res);
        let n = 0;
        timer = setInterval(() => {
          n++;
          res.write(n < 8 ? ': ping\n\n' : 'data: [DONE]\n\n');
          if (n >= 8) clearInterval(timer);
        }, 40);
        res.on('close', () => clearInterval(timer));
      });
      const comments: string[] = [];
      const c = collect(connectSse(server.url, { idleTimeoutMs: 150, onComment: (t) => comments.push(t), isTerminal: isDone }));
      expect(await within(c.done, 3000)).toEqual({});
      expect(server.requests).toHaveLength(1);
      expect(comments).toHaveLength(7);
    });

    it('does not time out while the subscriber has no demand (the socket is paused on purpose)', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: a\n\n'); // then silence
      });
      const c = collect(connectSse(server.url, { idleTimeoutMs: 100 }), 1);
      await waitFor(() => c.events.length === 1, 2000);
      await sleep(350);
      expect(server.requests).toHaveLength(1);
      c.sub.cancel();
    });

    it('fails with TimeoutError when reconnect is false', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.flushHeaders();
      });
      const { error } = await within(collect(connectSse(server.url, { idleTimeoutMs: 100, reconnect: false })).done, 2000);
      expect(error).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', kind: 'idle', timeoutMs: 100 });
    });
  });

  describe('termination and release', () => {
    it('fails without reconnecting when an event exceeds maxEventBytes', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end(`data: ${'x'.repeat(5000)}\n\n`);
      });
      const { error } = await within(collect(connectSse(server.url, { maxEventBytes: 1000, initialDelayMs: 1 })).done, 2000);
      expect(error).toBeInstanceOf(SseLimitError);
      expect(server.requests).toHaveLength(1);
    });

    it('hands attachHeld the bytes of the current connection’s unfinished event, none once it dropped', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        if (server.requests.length === 1) {
          res.write(`data: 1\n\ndata: ${'x'.repeat(4000)}`);
          setTimeout(() => res.destroy(), 200);
        } else res.end('data: [DONE]\n\n');
      });
      let held: () => number = () => NaN;
      const seen: number[] = [];
      const c = collect(
        connectSse(server.url, {
          isTerminal: isDone,
          initialDelayMs: 300,
          maxDelayMs: 300,
          attachHeld: (count) => (held = count),
          onReconnect: () => void seen.push(held()),
        }),
      );
      await waitFor(() => held() >= 4000, 2000);
      expect(await within(c.done, 3000)).toEqual({});
      expect(c.events.map((e) => e.data)).toEqual(['1', '[DONE]']);
      expect(seen).toEqual([0]);
      expect(held()).toBe(0);
    });

    it('closes the upstream connection on cancel', async () => {
      let closed = false;
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: a\n\n');
        res.on('close', () => (closed = true));
      });
      const c = collect(connectSse(server.url), 1);
      await waitFor(() => c.events.length === 1, 2000);
      c.sub.cancel();
      await waitFor(() => closed && server.openSockets() === 0, 2000);
    });

    it('cancels a pending backoff timer on cancel', async () => {
      const server = await serve((_req, res) => res.socket?.destroy());
      const c = collect(connectSse(server.url, { initialDelayMs: 200, random: () => 0.9 }));
      await waitFor(() => server.requests.length === 1, 2000);
      await sleep(30);
      c.sub.cancel();
      await sleep(300);
      expect(server.requests).toHaveLength(1);
    });

    it('signals the abort reason and removes its listener when the signal aborts', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.write('data: a\n\n');
      });
      const controller = new AbortController();
      const c = collect(connectSse(server.url, { signal: controller.signal }));
      await waitFor(() => c.events.length === 1, 2000);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      const reason = new Error('stop');
      controller.abort(reason);
      expect(await within(c.done, 2000)).toEqual({ error: reason });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      await waitFor(() => server.openSockets() === 0, 2000);
    });

    it('removes its signal listener on completion', async () => {
      const server = await serve((_req, res) => {
        sseHead(res);
        res.end('data: [DONE]\n\n');
      });
      const controller = new AbortController();
      await within(collect(connectSse(server.url, { signal: controller.signal, isTerminal: isDone })).done, 2000);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    });

    it('rejects invalid options at call time', () => {
      expect(() => connectSse('http://127.0.0.1:1/', { maxAttempts: 0 })).toThrow(RangeError);
      expect(() => connectSse('http://127.0.0.1:1/', { idleTimeoutMs: -1 })).toThrow(RangeError);
      expect(() => connectSse('http://127.0.0.1:1/', { lastEventId: 'a\nb' })).toThrow(TypeError);
    });
  });
});
