import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import zlib from 'node:zlib';
import fetch from 'node-fetch';
import { acceptedBy, bodyIsResponse, CallSignal, dropSentHeaders, muteBodyCallbacks, onServerClose, readBeingParsed, releaseFetchListeners, setReadCall, strictGzipEnd, upstreamAgent, withClientRequest } from '../../src/http/node-hooks';
import { markListeners, type ListenerMark } from '../../src/http/listener-mark';

// These specs pin what tidegate relies on inside Node and node-fetch. A failure here after an
// upgrade means a hook in src/http/node-hooks.ts no longer holds: fix the hook, not the spec.

let server: http.Server;
let url: string;
let serverClosed: Promise<void>;

beforeEach(async () => {
  let onClose!: () => void;
  serverClosed = new Promise((r) => (onClose = r));
  server = http.createServer((req, res) => {
    req.socket.once('close', onClose);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    // The body comes after the response was handed over, in one 64 KiB write.
    setTimeout(() => res.end(Buffer.alloc(64 * 1024, 0x61)), 50);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

function send(onRequest: (req: http.ClientRequest) => void, signal?: InstanceType<typeof CallSignal>): ReturnType<typeof fetch> {
  const target = new URL(url);
  return withClientRequest(onRequest, () => fetch(target, { agent: upstreamAgent(target), signal: signal as never }));
}

describe('Node and node-fetch internals the upstream client relies on', () => {
  it('node-fetch hands its ClientRequest to the agent inside fetch(), so the call sees it', async () => {
    const seen: http.ClientRequest[] = [];
    const response = await send((req) => seen.push(req));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(http.ClientRequest);
    await response.buffer();
  });

  it("node-fetch's body is the IncomingMessage itself once its pipe() is taken over", async () => {
    const response = await send((req) => req.once('response', (res: http.IncomingMessage) => bodyIsResponse(res)));
    expect(response.body).toBeInstanceOf(http.IncomingMessage);
    expect((await response.buffer()).length).toBe(64 * 1024);
  });

  it("the socket's reads follow the size its read call asks for (net onread)", async () => {
    const sizes: number[] = [];
    const response = await send((req) =>
      req.once('response', (res: http.IncomingMessage) => {
        if (res.socket !== null) setReadCall(res.socket, { readsSized: () => true, nextReadBytes: () => 1024 });
        res.on('data', (chunk: Buffer) => sizes.push(chunk.length));
      }),
    );
    await response.buffer();
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(64 * 1024);
    // Sized reads of 1 KiB: no chunk larger, and so at least 64 of them.
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1024);
    expect(sizes.length).toBeGreaterThanOrEqual(64);
  });

  it("Node's HTTP parser frames a body to its end without a body callback, and gets it back for the next message", async () => {
    const pushed: number[] = [];
    let parsedRead: Buffer | undefined;
    const first = await send((req) =>
      req.once('response', (res: http.IncomingMessage) => {
        // A view of the shared read buffer: copied, the next read reuses it.
        const read = res.socket === null ? undefined : readBeingParsed(res.socket);
        parsedRead = read === undefined ? undefined : Buffer.from(read);
        expect(muteBodyCallbacks(res)).toBeDefined();
        res.on('data', (chunk: Buffer) => pushed.push(chunk.length));
      }),
    );
    // The 64 KiB body went through the parser unseen, and the response still ended.
    expect((await first.buffer()).length).toBe(0);
    expect(pushed).toEqual([]);
    expect(parsedRead?.toString('latin1', 0, 8)).toBe('HTTP/1.1');
    // The next message on the kept-alive socket (and its parser) gets its body again.
    const second = await send(() => undefined);
    expect((await second.buffer()).length).toBe(64 * 1024);
  });

  it('node-fetch takes a CallSignal as its signal: aborting it closes the upstream connection', async () => {
    const signal = new CallSignal();
    const response = await send(() => undefined, signal);
    const body = response.buffer();
    signal.abort(new Error('stop'));
    await expect(body).rejects.toThrow();
    await serverClosed;
    expect(signal.aborted).toBe(true);
  });
});

describe("node-fetch's per-call scope (releaseFetchListeners)", () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  /** A POST through node-fetch as the call sends it (marks taken where the call takes them); released or not once answered. */
  async function post(body: Buffer, release: boolean): Promise<{ response: Awaited<ReturnType<typeof fetch>>; req: http.ClientRequest }> {
    const signal = new CallSignal();
    const target = new URL(url);
    let sent: { req: http.ClientRequest; reqMark: ListenerMark; res?: http.IncomingMessage; resMark?: ListenerMark } | undefined;
    const response = await withClientRequest(
      (req) => {
        const s = (sent = { req, reqMark: markListeners(req) });
        req.once('response', (res: http.IncomingMessage) => {
          bodyIsResponse(res);
          Object.assign(s, { res, resMark: markListeners(res) });
        });
      },
      () => fetch(target, { method: 'POST', body, agent: upstreamAgent(target), signal: signal as never }),
    );
    if (sent?.res === undefined || sent.resMark === undefined) throw new Error('no response seen');
    if (release) releaseFetchListeners(sent.req, sent.reqMark, sent.res, sent.resMark, signal);
    return { response, req: sent.req };
  }

  /** Whether the request body is still reachable once the answer came (after a full GC), the body unread. */
  async function bodyHeld(release: boolean): Promise<boolean> {
    const ref = new WeakRef(Buffer.alloc(4096, 0x62));
    const { response } = await post(ref.deref() as Buffer, release);
    await tick(20);
    gc();
    await tick(0);
    gc();
    const held = ref.deref() !== undefined;
    expect((await response.buffer()).length).toBe(64 * 1024);
    return held;
  }

  it("node-fetch keeps the request's body alive while its listeners are there, not once they are released", async () => {
    expect(await bodyHeld(false)).toBe(true);
    expect(await bodyHeld(true)).toBe(false);
  });

  it('after the release a reset still errors the body, and the request error it also raises is heard', async () => {
    server.removeAllListeners('request');
    server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: a\n\n');
      setTimeout(() => res.socket?.resetAndDestroy(), 30);
    });
    const { response, req } = await post(Buffer.from('{}'), true);
    // Only the stand-in hears it: unheard, the socket's error would be thrown from the request.
    const heard: unknown[] = [];
    const emit = req.emit.bind(req);
    req.emit = (event: string | symbol, ...args: unknown[]): boolean => (event === 'error' && heard.push(args[0]), emit(event, ...args));
    await expect(response.buffer()).rejects.toThrow();
    await tick(20);
    expect(heard).toHaveLength(1);
    expect(req.listenerCount('error')).toBe(1);
  });

  it("a request's header map and head string go once its head was written: the upstream got every header, the socket serves the next request", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const ports = new Set<number>();
    server.removeAllListeners('request');
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(req.headers);
      ports.add(req.socket.remotePort ?? 0);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: a\n\n');
    });
    for (let i = 0; i < 2; i++) {
      const target = new URL(url);
      let sent: http.ClientRequest | undefined;
      const response = await withClientRequest((req) => (sent = req), () => fetch(target, { agent: upstreamAgent(target), headers: { 'x-one': `v${i}` } }));
      const req = sent as http.ClientRequest;
      expect(Object.getOwnPropertySymbols(req).some((s) => s.description === 'kOutHeaders')).toBe(true);
      expect(req.getHeader('x-one')).toEqual([`v${i}`]);
      dropSentHeaders(req);
      expect(req.getHeader('x-one')).toBeUndefined();
      // The written head's string goes too; the request still reads as sent.
      expect((req as unknown as { _header: string })._header).not.toContain('x-one');
      expect(req.headersSent).toBe(true);
      expect(() => req.setHeader('x-two', 'v')).toThrow(/after they are sent/);
      expect(await response.text()).toBe('data: a\n\n');
      await tick(10);
    }
    expect(seen.map((h) => h['x-one'])).toEqual(['v0', 'v1']);
    expect(ports.size).toBe(1);
  });

  it("the upstream agent's copy of a socket's options stays within 11 entries (a 16-entry dictionary), and its sockets are pooled and reused", async () => {
    const ports: number[] = [];
    server.removeAllListeners('request');
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      ports.push(req.socket.remotePort ?? 0);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: a\n\n');
    });
    const target = new URL(url);
    const agent = upstreamAgent(target) as unknown as { freeSockets: Record<string, net.Socket[]> };
    for (let i = 0; i < 3; i++) {
      let socket: net.Socket | undefined;
      const response = await withClientRequest((req) => req.once('socket', (s: net.Socket) => (socket = s)), () => fetch(target, { agent: upstreamAgent(target) }));
      expect(await response.text()).toBe('data: a\n\n');
      // The options the pool's 'free' listener holds for the socket's lifetime.
      const onFree = (socket as net.Socket).listeners('free')[0] as (...a: unknown[]) => void;
      let freed: Record<string, unknown> | undefined;
      const emit = (upstreamAgent(target) as unknown as { emit: (...a: unknown[]) => boolean }).emit;
      (upstreamAgent(target) as unknown as { emit: unknown }).emit = (_event: string, _s: unknown, options: Record<string, unknown>) => ((freed = options), true);
      try {
        onFree();
      } finally {
        (upstreamAgent(target) as unknown as { emit: unknown }).emit = emit;
      }
      const keys = Object.keys(freed ?? {});
      expect(keys).toEqual(expect.arrayContaining(['host', 'port', 'onread']));
      expect(keys).not.toContain('hostname');
      expect(keys).not.toContain('maxSockets');
      expect(keys.length).toBeLessThanOrEqual(11);
      await tick(10);
    }
    expect(new Set(ports).size).toBe(1);
    expect(Object.values(agent.freeSockets).flat().length).toBeGreaterThan(0);
    expect(upstreamAgent(target).maxSockets).toBe(Infinity);
  });

  it('after the release destroying the request closes the upstream connection', async () => {
    const { response, req } = await post(Buffer.from('{}'), true);
    const body = response.buffer();
    req.destroy();
    await expect(body).rejects.toThrow();
    await serverClosed;
  });
});

describe("Node's HTTP server internals the gateway relies on", () => {
  it('an accepted socket names the server that accepted it (acceptedBy); a client socket names none', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    try {
      const accepted = await new Promise<net.Socket>((r) => server.once('connection', r));
      expect(acceptedBy(accepted)).toBe(server);
      expect(acceptedBy(client)).toBeUndefined();
      accepted.destroy();
    } finally {
      client.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a Connection: close response ends its socket through destroySoon(), which onServerClose replaces', async () => {
    const closes: string[] = [];
    const closing = http.createServer((req, res) => {
      onServerClose(req.socket, () => {
        closes.push('replaced');
        req.socket.end();
      });
      res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
      res.end('bye');
    });
    await new Promise<void>((r) => closing.listen(0, '127.0.0.1', r));
    try {
      const port = (closing.address() as AddressInfo).port;
      const text = await new Promise<string>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        }).on('error', reject);
      });
      expect(text).toBe('bye');
      expect(closes).toEqual(['replaced']);
    } finally {
      closing.closeAllConnections();
      await new Promise<void>((r) => closing.close(() => r()));
    }
  });
});

describe('upstreamAgent', () => {
  it('picks the same agent for a URL string, unparsed, as for the parsed URL', () => {
    for (const url of ['http://127.0.0.1:8080/v1', 'https://api.example/v1', 'HTTPS://API.EXAMPLE/', ' https://api.example/', 'Http://a/']) {
      expect(upstreamAgent(url)).toBe(upstreamAgent(new URL(url)));
    }
    expect(upstreamAgent('https://a/')).not.toBe(upstreamAgent('http://a/'));
  });
});

describe("node-fetch's gunzip of a gzip body cut before its end", () => {
  let gzipServer: http.Server;
  let gzipUrl: string;
  const whole = zlib.gzipSync(Buffer.alloc(32 * 1024, 0x62));

  beforeAll(async () => {
    gzipServer = http.createServer((req, res) => {
      // Framed correctly (Content-Length), the gzip stream in it cut at half, or whole.
      const body = req.url === '/cut' ? whole.subarray(0, whole.length >> 1) : whole;
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      res.end(body);
    });
    await new Promise<void>((r) => gzipServer.listen(0, '127.0.0.1', r));
    gzipUrl = `http://127.0.0.1:${(gzipServer.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => gzipServer.close(() => r())));

  it('ends short without an error as node-fetch sets it up (its finishFlush is Z_SYNC_FLUSH)', async () => {
    const body = await (await fetch(`${gzipUrl}/cut`)).buffer();
    expect(body.length).toBeLessThan(32 * 1024);
  });

  it('fails with Z_BUF_ERROR once strictGzipEnd set its last flush, and a whole body still decodes', async () => {
    const cut = await fetch(`${gzipUrl}/cut`);
    strictGzipEnd(cut.body);
    await expect(cut.buffer()).rejects.toMatchObject({ code: 'Z_BUF_ERROR' });
    const ok = await fetch(`${gzipUrl}/whole`);
    strictGzipEnd(ok.body);
    expect((await ok.buffer()).equals(Buffer.alloc(32 * 1024, 0x62))).toBe(true);
  });
});
