import { readFileSync } from 'node:fs';
import net from 'node:net';
import { RawClient, sleep, waitFor } from '../harness/net';
import { startGatewayProcess, type GatewayProcess } from '../harness/gateway-process';
import { hostileUpstream, type HostileUpstream } from '../harness/hostile-upstream';

/**
 * The built `tidegate` CLI (run `npm run build` first) in its own process, in front of an
 * upstream that misbehaves on purpose, attacked by clients that leave at every phase.
 */

const ROUTES = ['hang', 'ttft', 'reset', 'big', 'gzip', 'fast', 'slow', 'echo'];

let up: HostileUpstream;
let gw: GatewayProcess;
const clients: RawClient[] = [];

beforeAll(async () => {
  up = await hostileUpstream();
  gw = await startGatewayProcess([
    '--upstream',
    up.url,
    '--stall-timeout-ms',
    '1500',
    '--heartbeat-ms',
    '300',
    '--max-buffered-bytes',
    '65536',
    ...ROUTES.flatMap((r) => ['--passthrough', `/${r}=${up.url}/${r}`]),
  ]);
}, 20_000);

afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
});

afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

async function open(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawClient> {
  const c = await RawClient.request(gw.port, path, options);
  clients.push(c);
  return c;
}

async function readUntil(c: RawClient, pattern: RegExp, timeoutMs = 5000): Promise<void> {
  c.readAll();
  await waitFor(() => pattern.test(c.text()), timeoutMs);
}

const aborted = (path: string): number => up.aborted.get(path) ?? 0;

describe('tidegate CLI against clients that leave', () => {
  it('a client gone during the upstream TTFT wait (before headers) aborts the upstream request', async () => {
    const before = aborted('/ttft');
    const c = await open('/ttft');
    await waitFor(() => (up.requests.get('/ttft') ?? 0) > 0);
    await sleep(200);
    c.destroy();
    await waitFor(() => aborted('/ttft') === before + 1, 1500);
    });

  it('a client gone right after the headers aborts a silent upstream', async () => {
    const before = aborted('/hang');
    const c = await open('/hang');
    await readUntil(c, /\r\n\r\n/);
    c.destroy();
    await waitFor(() => aborted('/hang') === before + 1, 1500);
  });

  it('a silent upstream still gets heartbeats to the client', async () => {
    const c = await open('/hang');
    await readUntil(c, /: ping\n\n/, 3000);
    expect(c.text()).toMatch(/content-type: text\/event-stream/i);
  });

  it('a client gone mid-event aborts the upstream', async () => {
    const before = aborted('/slow');
    const c = await open('/slow');
    await readUntil(c, /data: tick 3/);
    c.destroy();
    await waitFor(() => aborted('/slow') === before + 1, 1500);
  });

  it('a client that stops reading while the socket is full, then leaves, aborts the upstream', async () => {
    const before = aborted('/fast');
    const c = await open('/fast');
    await sleep(400); // never reads: the gateway's socket fills, the upstream is paused
    c.destroy();
    await waitFor(() => aborted('/fast') === before + 1, 1500);
  });

  // The stall cut sends the error event and a FIN first; if the peer still reads nothing for
  // another stall timeout (1.5 s here), an abortive close (RST) discards the send queue. A
  // graceful close alone leaves the orphaned socket in FIN-WAIT-1 holding every queued byte
  // (3.9 MB Send-Q per stream, for minutes), and the peer never learns the stream ended.
  it('a client that reads nothing is cut after the stall timeout with a reset, freeing the kernel send queue', async () => {
    const before = aborted('/fast');
    const c = await open('/fast');
    await waitFor(() => aborted('/fast') === before + 1, 5000);
    // The gateway's side of this connection is gone from the kernel's table: no FIN-WAIT-1
    // socket keeps the queued megabytes.
    const serverSide = (): boolean => {
      const key = `:${gw.port.toString(16).toUpperCase().padStart(4, '0')} `;
      const peer = `:${c.socket.localPort!.toString(16).toUpperCase().padStart(4, '0')} `;
      return readFileSync('/proc/net/tcp', 'latin1').split('\n').some((line) => {
        const f = line.trim().split(/\s+/);
        return `${f[1]} `.endsWith(key) && `${f[2]} `.endsWith(peer);
      });
    };
    await waitFor(() => !serverSide(), 1500 + 2000);
    // And the client sees the reset as soon as it reads.
    c.readAll();
    expect(await c.waitClosed(4000)).toBe(true);
  });

  it('a client that reads nothing is cut after the stall timeout: its upstream is aborted', async () => {
    const before = aborted('/fast');
    const c = await open('/fast');
    await waitFor(() => aborted('/fast') === before + 1, 5000);
    c.destroy();
  });
});

describe('tidegate CLI against a hostile upstream', () => {
  it('an upstream reset mid-event ends the client stream with event: error and never forwards the partial event', async () => {
    const c = await open('/reset');
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    const body = c.body();
    expect(body).toContain('data: complete\n\n');
    expect(body).not.toContain('half of an ev');
    expect(body).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_[A-Z_]+"/);
  });

  it('a 5 MB single event is refused with event: error (SSE limit), not buffered whole', async () => {
    const c = await open('/big');
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    const body = c.body();
    expect(body).not.toContain('x'.repeat(1024 * 1024));
    expect(body).toMatch(/ERR_TIDEGATE_SSE_LIMIT/);
  });

  // An upstream that gzips despite Accept-Encoding: identity: the body is inflated before the SSE
  // parser (node-fetch keeps the explicit identity header and gunzips with Z_SYNC_FLUSH), so the
  // client never gets 200, zero events and a clean end logged as outcome "completed".
  it('a gzip-encoded event stream is decoded, not relayed as an empty successful stream', async () => {
    const c = await open('/gzip');
    c.readAll();
    expect(await c.waitClosed(5000)).toBe(true);
    expect(c.body()).toContain('data: zipped\n\n');
    expect(c.text()).not.toMatch(/content-encoding: gzip/i);
  });
});

describe('tidegate CLI with hostile requests', () => {
  it('an HTTP/1.0 client gets the raw event stream (no chunked framing) and the close ends it', async () => {
    const socket = net.connect({ port: gw.port, host: '127.0.0.1' });
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.write('GET /slow HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
    try {
      await waitFor(() => /data: tick 2\n\n/.test(text), 5000);
      expect(text).toMatch(/^HTTP\/1\.[01] 200/);
      expect(text).not.toMatch(/transfer-encoding: chunked/i);
      expect(text).not.toMatch(/connection: keep-alive/i);
    } finally {
      socket.destroy();
    }
  });

  it('a Last-Event-ID with a bare CR is rejected by the HTTP parser and never reaches the upstream', async () => {
    const seen = up.lastEventIds.length;
    const c = await open('/echo', { headers: { 'last-event-id': '1\rX-Injected: yes' } });
    c.readAll();
    await c.waitClosed(3000);
    expect(c.text()).toMatch(/^HTTP\/1\.1 400/);
    expect(up.lastEventIds.length).toBe(seen);
  });

  it('a Last-Event-ID with obs-text bytes is forwarded or refused cleanly, never crashes the gateway', async () => {
    const socket = net.connect({ port: gw.port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.write(Buffer.concat([Buffer.from('GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nLast-Event-ID: '), Buffer.from([0xc3, 0xa9, 0x01, 0x7f]), Buffer.from('\r\n\r\n')]));
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const text = Buffer.concat(chunks).toString('latin1');
    expect(text).toMatch(/^HTTP\/1\.1 (200|400)/);
    expect(gw.child.exitCode).toBeNull();
    const health = await fetch(`${gw.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it.each([
    ['truncated JSON', '{"model":"m","stream":true,"messages":['],
    ['a JSON string', '"hello"'],
    ['NUL bytes', '\u0000\u0000{}'],
  ])('a malformed JSON body (%s) gets a 4xx JSON error in the OpenAI shape', async (_name, body) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const json = (await res.json()) as { error?: { message?: unknown } };
    expect(typeof json.error?.message).toBe('string');
  });

  // A body that is JSON but not an object is refused at the gateway with 400; it is never
  // forwarded to the upstream as a POST without a body.
  it('a JSON array body on an OpenAI route is refused with 400 without contacting the upstream', async () => {
    const before = up.requests.get('/v1/chat/completions') ?? 0;
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2]' });
    await res.arrayBuffer();
    expect(up.requests.get('/v1/chat/completions') ?? 0).toBe(before);
    expect(res.status).toBe(400);
  });

  it('a 6 MB JSON body is refused with 413 and a JSON error', async () => {
    const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'x'.repeat(6 * 1024 * 1024) }] });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(413);
    const json = (await res.json()) as { error?: { message?: unknown } };
    expect(typeof json.error?.message).toBe('string');
  });

  it('a body cut short (Content-Length larger than sent) then a disconnect leaves nothing behind', async () => {
    const socket = net.connect({ port: gw.port, host: '127.0.0.1' });
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":');
    await sleep(100);
    socket.destroy();
    await sleep(100);
    expect(await gw.activeStreams()).toBe(0);
  });

  it('after every attack above, no stream is left active', async () => {
    let active = -1;
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      active = await gw.activeStreams();
      if (active === 0) break;
      await sleep(50);
    }
    expect(active).toBe(0);
  });
});

describe('tidegate CLI under a connect/disconnect storm', () => {
  it('500 clients leaving at random phases leave no fds, no active streams and no upstream sockets behind', async () => {
    // Warm-up: one full stream, so lazily created handles (agents, timers, metrics) exist.
    const warm = await open('/echo');
    warm.readAll();
    await warm.waitClosed(3000);
    await sleep(200);
    const baseline = gw.fdCount();
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const paths = ['/slow', '/fast', '/hang', '/ttft', '/slow'];
    const one = async (i: number): Promise<void> => {
      const socket = net.connect({ port: gw.port, host: '127.0.0.1' });
      socket.on('error', () => undefined);
      const phase = random();
      await new Promise<void>((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('error', () => resolve());
      });
      const path = paths[i % paths.length] as string;
      if (phase < 0.1) {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n`); // leave mid-request-head
      } else {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
        if (phase > 0.5) socket.resume();
        else socket.pause();
      }
      await sleep(Math.floor(random() * 150));
      if (phase > 0.8) socket.resetAndDestroy();
      else socket.destroy();
    };
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(Array.from({ length: 50 }, (_, k) => one(batch * 50 + k)));
    }
    let active = -1;
    let fds = -1;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      active = await gw.activeStreams();
      fds = gw.fdCount();
      if (active === 0 && fds <= baseline + 4 && up.openSockets() <= 4) break;
      await sleep(100);
    }
    expect(active).toBe(0);
    expect(fds).toBeLessThanOrEqual(baseline + 4);
    expect(up.openSockets()).toBeLessThanOrEqual(4);
    expect(gw.child.exitCode).toBeNull();
  }, 60_000);
});
