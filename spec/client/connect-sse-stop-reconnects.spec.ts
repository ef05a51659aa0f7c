import { getEventListeners } from 'node:events';
import { connectSse } from '../../src/client';
import { SseConnectionError, SseHttpError } from '../../src/errors';
import { sleep, waitFor } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

const serve = scriptedServers();

describe('connectSse stopReconnects', () => {
  it('ends a Retry-After wait at once with the last answer when aborted', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' });
      res.end('{"error":"overloaded"}');
    });
    const stop = new AbortController();
    const c = collect(connectSse(server.url, { stopReconnects: stop.signal, isTerminal: isDone }));
    await waitFor(() => server.requests.length === 1, 2000);
    await sleep(50); // the session is waiting its 30 s now
    stop.abort();
    const { error } = await within(c.done, 1000, 'the stopped wait');
    expect(error).toBeInstanceOf(SseHttpError);
    expect(error).toMatchObject({ status: 503, body: '{"error":"overloaded"}', retryAfterMs: 30_000 });
    expect(server.requests).toHaveLength(1);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('starts no reconnect after a failure once aborted', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.write('data: 1\n\n');
      setTimeout(() => res.destroy(), 50);
    });
    const stop = new AbortController();
    const c = collect(connectSse(server.url, { stopReconnects: stop.signal, initialDelayMs: 10, isTerminal: isDone }));
    await waitFor(() => c.events.length === 1, 2000);
    stop.abort();
    const { error } = await within(c.done, 2000, 'the failed connection');
    expect(error).toBeInstanceOf(SseConnectionError);
    expect(server.requests).toHaveLength(1);
  });

  it('leaves an open connection streaming', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: 2\n\ndata: [DONE]\n\n'), 100);
    });
    const stop = new AbortController();
    const c = collect(connectSse(server.url, { stopReconnects: stop.signal, isTerminal: isDone }));
    await waitFor(() => c.events.length === 1, 2000);
    stop.abort();
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toBeUndefined();
    expect(c.events.map((e) => e.data)).toEqual(['1', '2', '[DONE]']);
  });

  it('reconnects as before while not aborted', async () => {
    const server = await serve((_req, res, index) => {
      if (index === 0) {
        res.writeHead(503, { 'retry-after': '0' });
        res.end();
        return;
      }
      sseHead(res);
      res.end('data: ok\n\ndata: [DONE]\n\n');
    });
    const stop = new AbortController();
    const c = collect(connectSse(server.url, { stopReconnects: stop.signal, initialDelayMs: 10, isTerminal: isDone }));
    const { error } = await within(c.done, 2000, 'the reconnected stream');
    expect(error).toBeUndefined();
    expect(c.events.map((e) => e.data)).toEqual(['ok', '[DONE]']);
    expect(server.requests).toHaveLength(2);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
