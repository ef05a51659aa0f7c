import { connectSse, type SseConnectingInfo } from '../../src/client';
import { SseHttpError } from '../../src/errors';
import { sleep, waitFor } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

const serve = scriptedServers();

describe('connectSse onConnecting', () => {
  it('reports each request as it starts, with the Last-Event-ID it carries', async () => {
    const server = await serve((_req, res, index) => {
      sseHead(res);
      if (index === 0) {
        res.write('id: 7\ndata: 1\n\n');
        setTimeout(() => res.destroy(), 20);
      } else res.end('data: [DONE]\n\n');
    });
    const seen: Array<SseConnectingInfo & { requestsSoFar: number }> = [];
    const c = collect(
      connectSse(server.url, {
        initialDelayMs: 10,
        isTerminal: isDone,
        onConnecting: (info) => seen.push({ ...info, requestsSoFar: server.requests.length }),
      }),
    );
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toBeUndefined();
    // Called before each request reached the server.
    expect(seen).toEqual([
      { request: 1, lastEventId: '', requestsSoFar: 0 },
      { request: 2, lastEventId: '7', requestsSoFar: 1 },
    ]);
    expect(server.requests).toHaveLength(2);
  });

  it('reports no request for a wait the signal ended', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503, { 'retry-after': '30' });
      res.end();
    });
    const leave = new AbortController();
    let reported = 0;
    const c = collect(connectSse(server.url, { signal: leave.signal, isTerminal: isDone, onConnecting: () => reported++ }));
    await waitFor(() => server.requests.length === 1, 2000);
    await sleep(50);
    leave.abort(new Error('client gone'));
    const { error } = await within(c.done, 1000, 'the aborted wait');
    expect(error).toMatchObject({ message: 'client gone' });
    expect(reported).toBe(1);
    expect(server.requests).toHaveLength(1);
  });

  it('sends nothing when the hook aborts the signal', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503, { 'retry-after': '0' });
      res.end();
    });
    const leave = new AbortController();
    const c = collect(
      connectSse(server.url, {
        signal: leave.signal,
        maxAttempts: 5,
        initialDelayMs: 10,
        isTerminal: isDone,
        onConnecting: ({ request }) => {
          if (request === 2) leave.abort(new Error('enough'));
        },
      }),
    );
    const { error } = await within(c.done, 2000, 'the stream');
    expect(error).toMatchObject({ message: 'enough' });
    expect(error).not.toBeInstanceOf(SseHttpError);
    await sleep(50);
    expect(server.requests).toHaveLength(1);
  });
});
