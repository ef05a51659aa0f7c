import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import fetch from 'node-fetch';
import { bypassBodyCallbacks } from '../../src/http/body-bypass';
import { BodyFraming } from '../../src/http/body-framing';
import { upstreamAgent, withClientRequest } from '../../src/http/node-hooks';

// A body picked out of the socket's reads arrives whole and in order, one push per read, and the
// parser it was taken from serves every later message as before.

const servers: net.Server[] = [];

/** A server that answers every request with `respond(socket)`, writing raw HTTP. */
async function rawServer(respond: (socket: net.Socket) => void): Promise<string> {
  const server = net.createServer((socket) => {
    socket.once('data', () => respond(socket));
    socket.on('error', () => undefined);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** An http server: `handler` writes the answer. */
async function httpServer(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

afterEach(async () => {
  for (const s of servers.splice(0)) {
    (s as http.Server).closeAllConnections?.();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

interface Received {
  bypassed: boolean;
  body: Buffer;
  pushes: number;
  res: http.IncomingMessage;
}

/** GETs `url` through the upstream agent, bypassing the body callbacks where it can. */
async function get(url: string): Promise<Received> {
  const target = new URL(url);
  let bypassed = false;
  let pushes = 0;
  let incoming: http.IncomingMessage | undefined;
  const response = await withClientRequest(
    (req) =>
      req.once('response', (res: http.IncomingMessage) => {
        incoming = res;
        bypassed = bypassBodyCallbacks(res, 'GET');
        res.on('data', () => pushes++);
      }),
    () => fetch(target, { agent: upstreamAgent(target) }),
  );
  const body = await response.buffer();
  return { bypassed, body, pushes, res: incoming as http.IncomingMessage };
}

const EVENT = 'data: {"choices":[{"delta":{"content":"tok"}}]}\n\n';

describe('bypassBodyCallbacks', () => {
  it('hands a body of many HTTP chunks over in one push per socket read, byte for byte', async () => {
    const url = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // 500 HTTP chunks, written in one tick: they reach the client in a few reads.
      for (let i = 0; i < 500; i++) res.write(`${EVENT.slice(0, -2)}${i}\n\n`);
      res.end();
    });
    const got = await get(url);
    expect(got.bypassed).toBe(true);
    expect(got.body.toString()).toBe(Array.from({ length: 500 }, (_, i) => `${EVENT.slice(0, -2)}${i}\n\n`).join(''));
    expect(got.pushes).toBeLessThan(50);
  });

  it('picks the body out behind the head in the same read, with chunk extensions and trailers', async () => {
    const url = await rawServer((s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Done\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Done: yes\r\n\r\n'));
    const got = await get(url);
    expect(got.bypassed).toBe(true);
    expect(got.body.toString()).toBe('hello world');
    expect(got.res.trailers['x-done']).toBe('yes');
  });

  it('takes a Content-Length body', async () => {
    const url = await rawServer((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello');
      setTimeout(() => s.end(' world'), 20);
    });
    const got = await get(url);
    expect(got.bypassed).toBe(true);
    expect(got.body.toString()).toBe('hello world');
  });

  it('leaves a head that spans two reads to the parser, body intact', async () => {
    const url = await rawServer((s) => {
      s.write('HTTP/1.1 200 OK\r\nTransfer-Enc');
      // Long enough for the client to have read the first part on its own, even on a busy machine.
      setTimeout(() => s.end('oding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'), 300);
    });
    const got = await get(url);
    expect(got.bypassed).toBe(false);
    expect(got.body.toString()).toBe('ok');
  });

  it('finds the answer behind a 103 Early Hints head', async () => {
    const url = await rawServer((s) => s.end('HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    const got = await get(url);
    expect(got.body.toString()).toBe('ok');
  });

  it('serves the next response on the kept-alive socket with the parser callbacks given back', async () => {
    const url = await httpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write(`one ${req.url}`);
      res.end(' two');
    });
    const first = await get(url);
    const second = await get(`${url}again`);
    expect(first.body.toString()).toBe('one / two');
    expect(second.body.toString()).toBe('one /again two');
    expect(second.bypassed).toBe(true);
    expect(second.res.socket === null || second.res.socket === first.res.socket || first.res.socket === null).toBe(true);
  });

  it("gives the parser its callbacks back when the body is cut: the next parser user gets its body", async () => {
    const url = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(EVENT); // then nothing more
    });
    const target = new URL(url);
    const ac = new AbortController();
    let closed: Promise<unknown> | undefined;
    let bypassed = false;
    const response = await withClientRequest(
      (req) =>
        req.once('response', (res: http.IncomingMessage) => {
          bypassed = bypassBodyCallbacks(res, 'GET');
          closed = new Promise((r) => res.socket?.once('close', r));
        }),
      () => fetch(target, { agent: upstreamAgent(target), signal: ac.signal }),
    );
    response.body.on('error', () => undefined);
    expect(bypassed).toBe(true);
    ac.abort();
    await closed;
    await new Promise((r) => setImmediate(r));
    // Node's parser pool hands the freed parser to the next request: a plain http.get here.
    const plain = await httpServer((_req, res) => res.end('plain body'));
    const body = await new Promise<string>((resolve, reject) => {
      http.get(plain, { agent: false }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    expect(body).toBe('plain body');
  });

  it('ends with an error a body the parser took as complete where the decoder failed, never short or unhandled', async () => {
    // The head, then a valid body in a later read: a decoder that refuses it (as one did chunk
    // sizes with leading zeros) while the parser completes the message.
    const url = await rawServer((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
      setTimeout(() => s.write('2\r\nok\r\n0\r\n\r\n'), 30);
    });
    const decode = BodyFraming.prototype.decode;
    const refuse = jest.spyOn(BodyFraming.prototype, 'decode').mockImplementation(function (this: BodyFraming, ...args: Parameters<BodyFraming['decode']>) {
      if (args[2] <= args[1]) return decode.apply(this, args);
      this.failure = 'refused by a decoder that disagrees';
      return 0;
    });
    try {
      const target = new URL(url);
      const ended = await new Promise<string>((resolve) => {
        withClientRequest(
          (req) =>
            req.once('response', (res: http.IncomingMessage) => {
              expect(bypassBodyCallbacks(res, 'GET')).toBe(true);
              res.on('data', () => undefined);
              res.on('end', () => resolve('end'));
              res.on('error', (err) => resolve(`error: ${err.message}`));
            }),
          () => fetch(target, { agent: upstreamAgent(target) }),
        ).catch((err: Error) => resolve(`fetch rejected: ${err.message}`));
      });
      expect(ended).toBe('error: upstream body framing not understood (refused by a decoder that disagrees)');
      expect(refuse).toHaveBeenCalled();
      // An 'error' nobody heard would have failed the spec as an uncaught exception by now.
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      refuse.mockRestore();
    }
  });

  it('ends a body whose framing is broken with an error, never silently short', async () => {
    const url = await rawServer((s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\nmore\r\n0\r\n\r\n'));
    await expect(get(url)).rejects.toThrow();
  });
});
