import { openSse } from '../../src/client';
import { SseHttpError } from '../../src/errors';
import { sleep, waitFor } from '../harness/net';
import { collect, isDone, scriptedServers, sseHead, within } from './helpers';

const serve = scriptedServers();

describe('openSse', () => {
  it('resolves with the first response before anything is read, then streams on subscribe', async () => {
    const server = await serve((_req, res) => {
      sseHead(res, { 'x-upstream': 'yes' });
      res.end('data: a\n\ndata: [DONE]\n\n');
    });
    const stream = await within(openSse(server.url, { isTerminal: isDone }), 2000);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('x-upstream')).toBe('yes');
    const c = collect(stream.events);
    expect(await within(c.done, 2000)).toEqual({});
    expect(c.events.map((e) => e.data)).toEqual(['a', '[DONE]']);
  });

  it('rejects with SseHttpError (status and body) so a proxy can still answer with an HTTP error', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"error":"bad key"}');
    });
    const err = await within(openSse(server.url).then(() => undefined, (e: unknown) => e), 2000);
    expect(err).toBeInstanceOf(SseHttpError);
    expect(err).toMatchObject({ status: 401, body: '{"error":"bad key"}' });
  });

  it('resumes a dropped upstream with Last-Event-ID: the downstream sees no gap and no duplicate', async () => {
    // An upstream that honours Last-Event-ID: it resumes after the given id.
    const all = Array.from({ length: 10 }, (_, i) => i + 1);
    const server = await serve((req, res, index) => {
      sseHead(res);
      const after = Number(req.headers['last-event-id'] ?? 0);
      const rest = all.filter((n) => n > after);
      if (index === 0) {
        const head = rest.slice(0, 4).map((n) => `id: ${n}\ndata: ${n}\n\n`).join('');
        res.write(`${head}id: 5\ndata: 5-partial`, () => setTimeout(() => res.socket?.destroy(), 20));
      } else {
        res.end(`${rest.map((n) => `id: ${n}\ndata: ${n}\n\n`).join('')}data: [DONE]\n\n`);
      }
    });
    const stream = await within(openSse(server.url, { initialDelayMs: 10, isTerminal: isDone, lastEventId: '0' }), 2000);
    const c = collect(stream.events);
    expect(await within(c.done, 3000)).toEqual({});
    expect(c.events.map((e) => e.data)).toEqual([...all.map(String), '[DONE]']);
    expect(server.requests.map((r) => r.headers['last-event-id'])).toEqual(['0', '4']);
  });

  it('resolves a 204 with events that complete at once', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const stream = await within(openSse(server.url), 2000);
    expect(stream.response.status).toBe(204);
    expect(await within(collect(stream.events).done, 1000)).toEqual({});
  });

  it('releases the connection on cancel() without a subscriber', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    });
    const stream = await within(openSse(server.url), 2000);
    await waitFor(() => server.openSockets() === 1, 1000);
    stream.cancel();
    await waitFor(() => server.openSockets() === 0, 2000);
  });

  it('refuses a second subscriber', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    });
    const stream = await within(openSse(server.url), 2000);
    const first = collect(stream.events, 1);
    const second = collect(stream.events);
    expect((await within(second.done, 1000)).error).toBeInstanceOf(Error);
    await waitFor(() => first.events.length === 1, 2000);
    await sleep(10);
    first.sub.cancel();
  });
});
