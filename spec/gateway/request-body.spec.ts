import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CLOSE_LINGER_BYTES } from '../../src/gateway/admission';
import { startTestGateway, type TestGateway } from './helpers';

const CLI = path.resolve(__dirname, '../../dist/gateway/cli.js');

let tg: TestGateway | undefined;
const sockets: net.Socket[] = [];
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets.splice(0)) s.destroy();
  await tg?.close();
  tg = undefined;
});

/** A raw client socket: what it received, when it closed, and how many bytes it handed to the kernel. */
interface RawClient {
  socket: net.Socket;
  reply: () => string;
  closed: Promise<number>;
}

function connect(port: number): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let reply = '';
    socket.setEncoding('utf8').on('data', (d: string) => (reply += d));
    socket.on('error', () => {}); // EPIPE / ECONNRESET once the gateway closes: expected
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.once('connect', () => resolve({ socket, reply: () => reply, closed }));
    socket.once('error', reject);
  });
}

function head(pathname: string, headers: Record<string, string | number>): string {
  return `POST ${pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function statusOf(reply: string): number {
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(reply)?.[1] ?? 0);
}

function bodyOf(reply: string): unknown {
  return JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
}

/** The largest send and receive buffers Linux may autotune a TCP socket to (`tcp_wmem` / `tcp_rmem` max), bytes. */
function kernelBufferSlack(): number {
  const max = (file: string): number => Number(readFileSync(file, 'utf8').trim().split(/\s+/)[2]);
  return max('/proc/sys/net/ipv4/tcp_wmem') + max('/proc/sys/net/ipv4/tcp_rmem');
}

describe('request body: size limit', () => {
  it('refuses an endless chunked body after at most its size limit, 413 in the route shape, without reading the rest', async () => {
    const limit = 64 * 1024;
    tg = await startTestGateway({ config: { limits: { maxRequestBodyBytes: limit } } });
    let readByGateway = -1;
    tg.gateway.server.once('connection', (s: net.Socket) => s.once('close', () => (readByGateway = s.bytesRead)));
    const client = await connect(tg.gateway.port);
    const { socket } = client;
    socket.write(head('/v1/chat/completions', { 'Transfer-Encoding': 'chunked' }));
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    let stopped = false;
    const pump = (): void => {
      while (!stopped && !socket.destroyed && socket.write(frame));
    };
    socket.on('drain', pump);
    const t0 = Date.now();
    pump();
    const closedAt = await Promise.race([client.closed, new Promise<number>((r) => timers.push(setTimeout(() => r(-1), 10_000)))]);
    stopped = true;
    expect(closedAt).toBeGreaterThan(0);
    const sent = socket.bytesWritten;
    // What the gateway read (≤ limit + one 64 KiB socket read + the linger's discard) plus what both kernels may hold:
    // the client's send buffer and the gateway's receive buffer at their autotuned maxima.
    const slack = 64 * 1024 + frame.length + CLOSE_LINGER_BYTES + kernelBufferSlack();
    await until(() => readByGateway >= 0);
    console.log(`endless chunked body: gateway read ${readByGateway} bytes, client sent ${sent} bytes before close (limit ${limit}, allowed ${limit + slack}) in ${closedAt - t0} ms`);
    expect(sent).toBeLessThanOrEqual(limit + slack);
    // The gateway itself read at most the limit, one socket read (64 KiB), the head, and what its
    // lingering close discards after the answer (bounded, never buffered).
    expect(readByGateway).toBeLessThanOrEqual(limit + 64 * 1024 + 1024 + CLOSE_LINGER_BYTES + 64 * 1024);
    expect(statusOf(client.reply())).toBe(413);
    expect(client.reply()).toMatch(/\r\nConnection: close\r\n/i);
    expect(bodyOf(client.reply())).toEqual({ error: { message: `the request body is larger than ${limit} bytes`, type: 'tidegate_error', code: 'ERR_TIDEGATE_BODY_TOO_LARGE', param: null } });
  });

  it('refuses a declared Content-Length over the limit at once, before any body byte', async () => {
    tg = await startTestGateway({ config: { limits: { maxRequestBodyBytes: 1024, requestBodyTimeoutMs: 20_000 } } });
    const client = await connect(tg.gateway.port);
    const t0 = Date.now();
    client.socket.write(head('/v1/messages', { 'Content-Length': 10 * 1024 * 1024, 'anthropic-version': '2023-06-01' }));
    const closedAt = await client.closed;
    expect(closedAt - t0).toBeLessThan(2000);
    expect(statusOf(client.reply())).toBe(413);
    expect(bodyOf(client.reply())).toMatchObject({ type: 'error', error: { code: 'ERR_TIDEGATE_BODY_TOO_LARGE' } });
  });

  it('refuses a compressed body with 415 (an inflated body would escape the limit)', async () => {
    tg = await startTestGateway();
    const client = await connect(tg.gateway.port);
    client.socket.write(`${head('/v1/chat/completions', { 'Content-Length': 4, 'Content-Encoding': 'gzip' })}abcd`);
    await client.closed;
    expect(statusOf(client.reply())).toBe(415);
    expect(bodyOf(client.reply())).toMatchObject({ error: { code: 'ERR_TIDEGATE_BODY_ENCODING' } });
  });

  it('closes the connection after answering a body sent to no route, without draining it', async () => {
    tg = await startTestGateway();
    const client = await connect(tg.gateway.port);
    client.socket.write(head('/nowhere', { 'Transfer-Encoding': 'chunked' }));
    const frame = `4000\r\n${' '.repeat(0x4000)}\r\n`;
    const drip = setInterval(() => client.socket.writable && client.socket.write(frame), 5);
    timers.push(drip);
    const closedAt = await Promise.race([client.closed, new Promise<number>((r) => timers.push(setTimeout(() => r(-1), 5000)))]);
    expect(closedAt).toBeGreaterThan(0);
    expect(statusOf(client.reply())).toBe(404);
  });
});

describe('request body: on a request no route reads a body of', () => {
  it.each(['/healthz', '/metrics', '/v1/models', '/v1/streams/unknown'])('closes the connection after answering GET %s with an endless body, without reading it on', async (pathname) => {
    tg = await startTestGateway({
      routes: [
        { path: '/v1/models', provider: 'openai', api: 'models', methods: ['GET'] },
        { path: '/v1/chat/completions', provider: 'openai', resume: true },
      ],
    });
    const client = await connect(tg.gateway.port);
    client.socket.write(`GET ${pathname} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const frame = `4000\r\n${' '.repeat(0x4000)}\r\n`;
    const drip = setInterval(() => client.socket.writable && client.socket.write(frame), 5);
    timers.push(drip);
    await until(() => statusOf(client.reply()) > 0);
    const answeredAt = Date.now();
    const closedAt = await Promise.race([client.closed, new Promise<number>((r) => timers.push(setTimeout(() => r(-1), 5000)))]);
    expect(closedAt).toBeGreaterThan(0);
    expect(closedAt - answeredAt).toBeLessThan(2000);
    expect(client.reply()).toMatch(/\r\nConnection: close\r\n/i);
  });
});

describe('request body: timeout', () => {
  it('answers 408 in the route shape and closes the connection when the body does not arrive in time', async () => {
    tg = await startTestGateway({ config: { limits: { requestBodyTimeoutMs: 500 } } });
    const client = await connect(tg.gateway.port);
    const t0 = Date.now();
    client.socket.write(`${head('/v1/messages', { 'Content-Length': 100, 'anthropic-version': '2023-06-01' })}{"model":`);
    const closedAt = await client.closed;
    expect(closedAt - t0).toBeGreaterThanOrEqual(450);
    expect(closedAt - t0).toBeLessThan(2000);
    expect(statusOf(client.reply())).toBe(408);
    expect(client.reply()).toMatch(/\r\nConnection: close\r\n/i);
    expect(bodyOf(client.reply())).toEqual({ type: 'error', error: { type: expect.any(String), message: 'the request body did not arrive within 500 ms', code: 'ERR_TIDEGATE_BODY_TIMEOUT' } });
  });

  it('closes 100 slow bodies (stalled or dripping) within the timeout, with bounded memory in a gateway process', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidegate-body-'));
    const timeoutMs = 1000;
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ port: 0, limits: { requestBodyTimeoutMs: timeoutMs } }));
    const child: ChildProcess = spawn(process.execPath, [CLI, '--config', path.join(dir, 'config.json')], { env: { ...process.env, PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const rss = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;
    try {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      const deadline = Date.now() + 10_000;
      let port = 0;
      while (port === 0) {
        const m = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(out.split('\n').find((l) => l.includes('gateway listening')) ?? '');
        if (m) port = Number(m[1]);
        else if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${out}`);
        else await new Promise((r) => setTimeout(r, 20));
      }
      const rssBefore = rss();
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rss())), 50);
      timers.push(sampler);

      const declared = 4 * 1024 * 1024 - 1; // within the default 4 MiB limit
      const clients: { client: RawClient; sentAt: number }[] = [];
      for (let i = 0; i < 100; i++) {
        const client = await connect(port);
        const sentAt = Date.now();
        client.socket.write(head('/v1/chat/completions', { 'Content-Length': declared }));
        if (i % 2 === 0) {
          client.socket.write(Buffer.alloc(1024 * 1024, 0x20)); // part of the body, then nothing
        } else {
          const drip = setInterval(() => client.socket.writable && client.socket.write(' '), 100);
          timers.push(drip);
          client.socket.once('close', () => clearInterval(drip));
        }
        clients.push({ client, sentAt });
      }
      const closedAt = await Promise.all(clients.map(({ client }) => Promise.race([client.closed, new Promise<number>((r) => timers.push(setTimeout(() => r(-1), 10_000)))])));
      clearInterval(sampler);
      const lifetimes = closedAt.map((t, i) => (t < 0 ? Infinity : t - clients[i].sentAt));
      const statuses = clients.map(({ client }) => statusOf(client.reply()));
      const growthMb = (rssPeak - rssBefore) / 2 ** 20;
      console.log(
        `100 slow bodies: longest open ${Math.max(...lifetimes)} ms (timeout ${timeoutMs} ms), 408 answers ${statuses.filter((s) => s === 408).length}/100, RSS ${(rssBefore / 2 ** 20).toFixed(0)} -> peak ${(rssPeak / 2 ** 20).toFixed(0)} MB (+${growthMb.toFixed(0)} MB)`,
      );
      // Each closes at its timeout; 2 s of slack for a shared 2-core machine running other suites
      // (without a body timeout none would close before the 10 s bound above).
      expect(Math.max(...lifetimes)).toBeLessThan(timeoutMs + 2000);
      expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(timeoutMs - 50);
      expect(statuses.every((s) => s === 408)).toBe(true);
      expect(growthMb).toBeLessThanOrEqual(150);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('request body: JSON nesting depth', () => {
  /** Sends `body` whole to `path` and waits for the answer's head and body. */
  async function send(path: string, body: string, headers: Record<string, string> = {}): Promise<RawClient> {
    const client = await connect((tg as TestGateway).gateway.port);
    client.socket.write(head(path, { 'Content-Length': Buffer.byteLength(body), ...headers }) + body);
    await until(() => /\r\n\r\n./s.test(client.reply()));
    return client;
  }
  const deep = (levels: number): string => `{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(levels)}${']'.repeat(levels)}}`;

  it('refuses a body nested deeper than 512 levels with 400 in the OpenAI shape, asking the upstream nothing', async () => {
    tg = await startTestGateway();
    // 2 levels are the object and its `metadata` array's parent: 511 more makes 513.
    const client = await send('/v1/chat/completions', deep(512));
    await client.closed;
    expect(statusOf(client.reply())).toBe(400);
    expect(bodyOf(client.reply())).toEqual({ error: { message: expect.stringContaining('deeper than 512 levels'), type: 'tidegate_error', code: 'ERR_TIDEGATE_BODY_TOO_DEEP', param: null } });
    expect(tg.sim.stats.requests).toBe(0);
  });

  it('refuses it in the Anthropic shape on an Anthropic route', async () => {
    tg = await startTestGateway();
    const client = await send('/v1/messages', deep(10_000), { 'anthropic-version': '2023-06-01' });
    await client.closed;
    expect(statusOf(client.reply())).toBe(400);
    expect(bodyOf(client.reply())).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('deeper than 512 levels'), code: 'ERR_TIDEGATE_BODY_TOO_DEEP' } });
    expect(tg.sim.stats.requests).toBe(0);
  });

  it('relays a body exactly 512 levels deep', async () => {
    tg = await startTestGateway();
    const client = await send('/v1/chat/completions', deep(511));
    await until(() => client.reply().includes('data: [DONE]'));
    expect(statusOf(client.reply())).toBe(200);
  });

  it('counts a bracket inside a string as text', async () => {
    tg = await startTestGateway();
    const body = JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: `${'['.repeat(5000)}\"${'{'.repeat(5000)}` }] });
    const client = await send('/v1/chat/completions', body);
    await until(() => client.reply().includes('data: [DONE]'));
    expect(statusOf(client.reply())).toBe(200);
  });
});

describe('request body: JSON values', () => {
  async function send(path: string, body: string): Promise<RawClient> {
    const client = await connect((tg as TestGateway).gateway.port);
    client.socket.write(head(path, { 'Content-Length': Buffer.byteLength(body) }));
    client.socket.write(body);
    await until(() => /\r\n\r\n./s.test(client.reply()), 10_000);
    return client;
  }
  /** A chat body of `n` messages: 5 values each (the object, 2 keys, 2 strings) and 6 more. */
  const chat = (n: number): string => JSON.stringify({ model: 'sim', stream: true, messages: Array.from({ length: n }, () => ({ role: 'user', content: 'a' })) });

  it('refuses a flat 4 MiB body of small values with 413 before parsing it, asking the upstream nothing', async () => {
    tg = await startTestGateway();
    const one = '{"role":"user","content":"a"}';
    const prefix = '{"model":"sim","stream":true,"messages":[';
    const body = prefix + Array(Math.floor((4 * 1024 * 1024 - prefix.length - 2) / (one.length + 1))).fill(one).join(',') + ']}';
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(4 * 1024 * 1024);
    const client = await send('/v1/chat/completions', body);
    await client.closed;
    expect(statusOf(client.reply())).toBe(413);
    expect(bodyOf(client.reply())).toEqual({ error: { message: 'the request body holds more than 100000 objects, arrays and strings (keys included)', type: 'tidegate_error', code: 'ERR_TIDEGATE_BODY_TOO_MANY_VALUES', param: null } });
    expect(tg.sim.stats.requests).toBe(0);
  });

  it('relays a body of exactly limits.maxRequestBodyValues values and refuses one more', async () => {
    tg = await startTestGateway({ config: { limits: { maxRequestBodyValues: 56 } } });
    const within = await send('/v1/chat/completions', chat(10));
    await until(() => within.reply().includes('data: [DONE]'));
    expect(statusOf(within.reply())).toBe(200);
    const over = await send('/v1/chat/completions', chat(10).replace('"stream"', '"n":1,"stream"'));
    await over.closed;
    expect(statusOf(over.reply())).toBe(413);
    expect(bodyOf(over.reply())).toMatchObject({ error: { code: 'ERR_TIDEGATE_BODY_TOO_MANY_VALUES' } });
  });

  it('takes limits.maxRequestBodyValues: 0 as no cap', async () => {
    tg = await startTestGateway({ config: { limits: { maxRequestBodyValues: 0 } } });
    const client = await send('/v1/chat/completions', chat(30_000));
    await until(() => client.reply().includes('data: [DONE]'));
    expect(statusOf(client.reply())).toBe(200);
  });
});

describe('request body: Expect: 100-continue', () => {
  it('answers a declared Content-Length over the limit with 413 and no 100 Continue that would invite the upload', async () => {
    tg = await startTestGateway({ config: { limits: { maxRequestBodyBytes: 1024 } } });
    const client = await connect(tg.gateway.port);
    client.socket.write(head('/v1/chat/completions', { 'Content-Length': 5_000_000_000, Expect: '100-continue' }));
    await client.closed;
    expect(client.reply()).not.toMatch(/100 Continue/);
    expect(statusOf(client.reply())).toBe(413);
    expect(bodyOf(client.reply())).toMatchObject({ error: { code: 'ERR_TIDEGATE_BODY_TOO_LARGE' } });
  });

  it('sends 100 Continue for a body within the limit, then reads it and streams the answer', async () => {
    tg = await startTestGateway();
    const client = await connect(tg.gateway.port);
    const body = JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    client.socket.write(head('/v1/chat/completions', { 'Content-Length': Buffer.byteLength(body), Expect: '100-continue' }));
    await until(() => client.reply().length > 0);
    expect(client.reply()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    client.socket.write(body);
    await until(() => client.reply().includes('data: [DONE]'));
    expect(client.reply()).toMatch(/\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  });
});

describe('request body: Expect: 100-continue on a path with its own body parser', () => {
  it('sends 100 Continue once the handler starts reading the body, then answers', async () => {
    tg = await startTestGateway();
    const client = await connect(tg.gateway.port);
    const body = '{}';
    client.socket.write(head('/playground/runs', { 'Content-Length': body.length, Expect: '100-continue' }));
    await until(() => client.reply().length > 0);
    expect(client.reply()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    client.socket.write(body);
    await until(() => /\r\n\r\nHTTP\/1\.1 \d{3} /.test(client.reply()));
    expect(statusOf(client.reply().slice('HTTP/1.1 100 Continue\r\n\r\n'.length))).toBeGreaterThanOrEqual(200);
  });
});
