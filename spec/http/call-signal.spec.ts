/**
 * The per-call `CallSignal` node-fetch 2 watches (src/http/request.ts) instead of a
 * WHATWG AbortController: abort at every phase, twice, with and without a reason; what the call
 * rejects or errors with; no listener left on the caller's signal after many calls.
 */
import http from 'node:http';
import { getEventListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { TimeoutError } from '../../src/errors';
import { UpstreamHttpError, UpstreamResetError } from '../../src/http/errors';
import { fetchUpstream, openUpstreamStream, sendUpstream, type UpstreamStream } from '../../src/http/request';
import { sleep, waitFor } from '../harness/net';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

describe('CallSignal', () => {
  let server: http.Server;
  let url: string;
  let handler: Handler = (_req, res) => void res.end();
  const sockets = new Set<import('node:net').Socket>();
  let requests = 0;
  let closedEarly = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests++;
      res.on('close', () => {
        if (!res.writableFinished) closedEarly++;
      });
      handler(req, res);
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const sseHead = (res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  };
  function drain(stream: UpstreamStream): Promise<unknown> {
    return new Promise((resolve) => {
      stream.body.subscribe({ error: (e: unknown) => resolve(e), complete: () => resolve('complete') });
    });
  }

  it('an abort after the head clears the first-byte deadline of a body never subscribed', async () => {
    handler = (_req, res) => sseHead(res);
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const controller = new AbortController();
    const stream = await openUpstreamStream({ url, signal: controller.signal, firstByteTimeoutMs: 60_000 });
    // Counted around the synchronous abort, so no other timer can come or go in between. A 60 s
    // timer left behind would hold the process (and a test worker) open that long.
    const before = timers();
    controller.abort(new Error('client left'));
    expect(timers()).toBe(before - 1);
    await expect(drain(stream)).resolves.toEqual(new Error('client left'));
  });

  it('a signal aborted before the call rejects with its reason, without sending', async () => {
    const before = requests;
    const reason = new Error('mine');
    await expect(openUpstreamStream({ url, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await expect(fetchUpstream({ url, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await sleep(30);
    expect(requests).toBe(before);
  });

  it('aborted without a reason: a DOMException AbortError, never an UpstreamResetError', async () => {
    const c = new AbortController();
    c.abort();
    const err = await openUpstreamStream({ url, signal: c.signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DOMException);
    expect((err as DOMException).name).toBe('AbortError');
  });

  it('aborted synchronously right after the call (connecting): rejects with the reason', async () => {
    const c = new AbortController();
    const reason = new Error('at connect');
    const p = openUpstreamStream({ url, signal: c.signal });
    c.abort(reason);
    await expect(p).rejects.toBe(reason);
  });

  it('aborted while waiting for the headers: rejects with the reason and the upstream sees the close', async () => {
    handler = () => undefined; // never answers
    const c = new AbortController();
    const reason = new Error('at headers');
    const early = closedEarly;
    const before = requests;
    const p = openUpstreamStream({ url, signal: c.signal });
    await waitFor(() => requests > before, 3000);
    c.abort(reason);
    c.abort(new Error('second'));
    await expect(p).rejects.toBe(reason);
    await waitFor(() => closedEarly > early, 3000);
  });

  it('aborted during the body: the body errors with the reason (twice aborted: still the first)', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    };
    const c = new AbortController();
    const stream = await openUpstreamStream({ url, signal: c.signal });
    const ended = drain(stream);
    await sleep(20);
    const reason = new TimeoutError('total', 5, 'total');
    c.abort(reason);
    c.abort(new Error('again'));
    expect(await ended).toBe(reason);
  });

  // UpstreamRequest.signal says "its reason is what the call rejects or errors with": an abort
  // while a non-2xx body is read rejects with that reason, not UpstreamHttpError(500). In the
  // relay a 5xx is retryable, so a status error here would retry the request of a client that left.
  it('aborted while an HTTP error body is being read: rejects with the reason, not UpstreamHttpError', async () => {
    handler = (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.write('partial error body');
    };
    const c = new AbortController();
    const reason = new Error('client left');
    const p = openUpstreamStream({ url, signal: c.signal });
    setTimeout(() => c.abort(reason), 50);
    const err = await p.catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(UpstreamHttpError);
    expect(err).toBe(reason);
  });

  it('after a chain of redirects, an abort during the body still errors it with the reason and closes the upstream', async () => {
    handler = (req, res) => {
      const n = Number((req.url ?? '').split('/').pop());
      if (n > 0) return void res.writeHead(307, { location: `/r/${n - 1}` }).end();
      sseHead(res);
      res.write('data: a\n\n');
    };
    const c = new AbortController();
    const early = closedEarly;
    const stream = await openUpstreamStream({ url: `${url}/r/5`, signal: c.signal, firstByteTimeoutMs: 0, followRedirects: true });
    const ended = drain(stream);
    await sleep(20);
    const reason = new Error('after redirects');
    c.abort(reason);
    expect(await ended).toBe(reason);
    await waitFor(() => closedEarly > early, 3000);
    expect(getEventListeners(c.signal, 'abort').length).toBe(0);
  });

  it('a reset during the body is an UpstreamResetError', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const stream = await openUpstreamStream({ url });
    expect(await drain(stream)).toBeInstanceOf(UpstreamResetError);
  });

  it('200 calls on one long-lived caller signal leave no abort listener on it', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end('data: x\n\n');
    };
    const c = new AbortController();
    for (let i = 0; i < 200; i++) {
      const stream = await openUpstreamStream({ url, signal: c.signal });
      expect(await drain(stream)).toBe('complete');
    }
    for (let i = 0; i < 50; i++) {
      handler = (_req, res) => void res.writeHead(404).end('no');
      await expect(openUpstreamStream({ url, signal: c.signal })).rejects.toBeInstanceOf(UpstreamHttpError);
    }
    expect(getEventListeners(c.signal, 'abort').length).toBe(0);
  });

  // A stream whose body nobody subscribes keeps its 'abort' listener on the caller's signal (and
  // through it the call, its response and its timers) even after the upstream ended. As with an
  // unread fetch body, that is the contract documented on UpstreamStream: the caller cancels a
  // body it does not read (the gateway's relay aborts every upstream call when its stream ends,
  // spec/gateway/overflow-status.spec.ts).
  it('a stream opened but never read holds its listener until its body is cancelled, then none', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end('data: x\n\n');
    };
    const c = new AbortController();
    const stream = await openUpstreamStream({ url, signal: c.signal, firstByteTimeoutMs: 0 });
    await sleep(100);
    expect(getEventListeners(c.signal, 'abort').length).toBe(1);
    stream.body.subscribeWithDemand({}).cancel();
    expect(getEventListeners(c.signal, 'abort').length).toBe(0);
  });

  // Once the answer came, node-fetch no longer watches the call's signal (its listeners are
  // dropped to free its request's objects): the call itself must close the connection.
  it('aborted during the body: the upstream sees the connection close', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    };
    const c = new AbortController();
    const early = closedEarly;
    const stream = await openUpstreamStream({ url, method: 'POST', body: '{"a":1}', signal: c.signal });
    const ended = drain(stream);
    await sleep(20);
    c.abort(new Error('stop'));
    expect(await ended).toEqual(new Error('stop'));
    await waitFor(() => closedEarly > early, 3000);
  });

  it('aborted before its body is subscribed: the upstream sees the connection close, the body errors with the reason', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    };
    const c = new AbortController();
    const early = closedEarly;
    const stream = await openUpstreamStream({ url, signal: c.signal });
    const reason = new Error('before the body');
    c.abort(reason);
    await waitFor(() => closedEarly > early, 3000);
    expect(await drain(stream)).toBe(reason);
  });

  it('an answer whose body was never taken: an abort closes the upstream connection', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    };
    const c = new AbortController();
    const early = closedEarly;
    const answer = await sendUpstream({ url, method: 'GET', signal: c.signal });
    expect(answer.status).toBe(200);
    c.abort(new Error('gone'));
    await waitFor(() => closedEarly > early, 3000);
  });

  it('a cancelled body closes the upstream connection', async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write('data: a\n\n');
    };
    const early = closedEarly;
    const stream = await openUpstreamStream({ url, method: 'POST', body: '{}' });
    const sub = stream.body.subscribeWithDemand({ next: () => undefined });
    await sleep(20);
    sub.cancel();
    await waitFor(() => closedEarly > early, 3000);
  });
});
