import { connectSse } from '../../src/client';
import { SseConnectionError, SseHttpError } from '../../src/errors';
import { sleep } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

const serve = scriptedServers();

describe('connectSse reconnectFilter', () => {
  it('ends the flow with a failure the filter refuses, as when attempts ran out', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"broken"}');
    });
    const seen: unknown[] = [];
    const c = collect(
      connectSse(server.url, {
        initialDelayMs: 10,
        isTerminal: isDone,
        reconnectFilter: (error) => {
          seen.push(error);
          return !(error instanceof SseHttpError && error.status === 500);
        },
      }),
    );
    const { error } = await within(c.done, 2000, 'the refused reconnect');
    expect(error).toBeInstanceOf(SseHttpError);
    expect(error).toMatchObject({ status: 500, body: '{"error":"broken"}' });
    expect(seen).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it('reconnects a failure it lets through, and sees an EOF as an SseConnectionError', async () => {
    const server = await serve((_req, res, index) => {
      sseHead(res);
      if (index === 0) res.end('data: 1\n\n');
      else res.end('data: 2\n\ndata: [DONE]\n\n');
    });
    const seen: unknown[] = [];
    const c = collect(connectSse(server.url, { initialDelayMs: 10, isTerminal: isDone, reconnectFilter: (error) => seen.push(error) > 0 }));
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toBeUndefined();
    expect(c.events.map((e) => e.data)).toEqual(['1', '2', '[DONE]']);
    expect(seen).toEqual([expect.any(SseConnectionError)]);
  });

  it('ends the flow with what a throwing filter threw', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const thrown = new Error('filter broke');
    const c = collect(
      connectSse(server.url, {
        initialDelayMs: 10,
        isTerminal: isDone,
        reconnectFilter: () => {
          throw thrown;
        },
      }),
    );
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toBe(thrown);
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['aborts the signal', 'signal'],
    ['stops reconnects', 'stop'],
  ])('sends nothing more when the filter %s', async (_name, which) => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const leave = new AbortController();
    const stop = new AbortController();
    const c = collect(
      connectSse(server.url, {
        signal: leave.signal,
        stopReconnects: stop.signal,
        initialDelayMs: 1,
        maxDelayMs: 1,
        isTerminal: isDone,
        reconnectFilter: () => {
          (which === 'signal' ? leave : stop).abort(new Error('enough'));
          return true;
        },
      }),
    );
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toBeDefined();
    await sleep(200);
    expect(server.requests).toHaveLength(1);
  });
});
