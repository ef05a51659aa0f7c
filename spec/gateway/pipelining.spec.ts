import net from 'node:net';
import { MAX_WAITING_REQUESTS } from '../../src/gateway/in-turn';
import { parsePrometheus, SIM_HEADERS, startTestGateway, type TestGateway } from './helpers';

// HTTP/1.1 pipelining (RFC 9112 §9.3.2): a client may send requests back to back on one
// connection; the answers go out in the order the requests came. Node parses every request it
// reads at once and hands each to the app, whatever is still being answered ahead of it.

let tg: TestGateway | undefined;
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await tg?.close();
  tg = undefined;
});

/** One raw `POST /v1/chat/completions` asking a stream of `tokens` tokens, paced by the simulator. */
function chatRequest(tokens: number, tokensPerSecond: number): string {
  const body = JSON.stringify({ model: `sim-synthetic-${tokens}`, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  return [
    'POST /v1/chat/completions HTTP/1.1',
    'Host: gateway',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `x-sim-tokens-per-second: ${tokensPerSecond}`,
    '',
    body,
  ].join('\r\n');
}

/** A connection to the gateway collecting everything it answers. */
async function connect(port: number): Promise<{ socket: net.Socket; text: () => string; closed: Promise<void> }> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  socket.setEncoding('utf8').on('data', (d: string) => (text += d));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, text: () => text, closed };
}

/** The status codes of the answers in `text`, in order. */
function statuses(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('pipelined requests', () => {
  it('starts no upstream call for a pipelined request while the answer before it runs', async () => {
    tg = await startTestGateway();
    const { port } = tg.gateway;
    const conn = await connect(port);
    conn.socket.write(Array.from({ length: 5 }, () => chatRequest(1000, 4)).join(''));
    await until(() => conn.text().includes('data: '));
    // Well past the time a parsed request takes to reach the upstream.
    await new Promise((r) => setTimeout(r, 200));
    expect(tg.sim.stats.requests).toBe(1);
    expect(tg.gateway.app.gateway.admission.streams).toBe(1);
  });

  it('gives every slot back and leaves no upstream open when the client leaves with requests waiting', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 2 } } });
    const { port } = tg.gateway;
    const admission = tg.gateway.app.gateway.admission;
    const conn = await connect(port);
    conn.socket.write(Array.from({ length: 5 }, () => chatRequest(1000, 4)).join(''));
    await until(() => conn.text().includes('data: '));
    conn.socket.destroy();
    await until(() => admission.streams === 0 && tg?.sim.stats.active === 0);

    // Both slots come back: two new streams are admitted.
    const a = await connect(port);
    const b = await connect(port);
    a.socket.write(chatRequest(1000, 4));
    b.socket.write(chatRequest(1000, 4));
    await until(() => a.text().includes('data: ') && b.text().includes('data: '));
    expect(statuses(a.text())).toEqual([200]);
    expect(statuses(b.text())).toEqual([200]);
  });

  it('holds one slot for a client that pipelines streams and stops reading', async () => {
    tg = await startTestGateway({ config: { limits: { maxStreams: 3 } } });
    const { port } = tg.gateway;
    const admission = tg.gateway.app.gateway.admission;
    const conn = await connect(port);
    conn.socket.pause();
    conn.socket.write(Array.from({ length: 5 }, () => chatRequest(100000, 5000)).join(''));
    await until(() => admission.streams === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(admission.streams).toBe(1);
    expect(tg.sim.stats.requests).toBe(1);
    conn.socket.destroy();
    await until(() => admission.streams === 0 && tg?.sim.stats.active === 0);
  });

  it('answers pipelined streams one after the other, in order, each whole', async () => {
    tg = await startTestGateway();
    const { port } = tg.gateway;
    const concurrent: number[] = [];
    tg.sim.on('request', () => concurrent.push(tg?.sim.stats.active ?? -1));
    const conn = await connect(port);
    conn.socket.write(Array.from({ length: 3 }, () => chatRequest(5, 500)).join(''));
    await until(() => (conn.text().match(/data: \[DONE\]/g) ?? []).length === 3);
    expect(statuses(conn.text())).toEqual([200, 200, 200]);
    // Each upstream call started alone: the one before it had ended.
    expect(concurrent).toEqual([1, 1, 1]);
    await until(() => tg?.gateway.app.gateway.admission.streams === 0);
  });

  it(`answers 503 and closes the connection past ${MAX_WAITING_REQUESTS} waiting requests`, async () => {
    tg = await startTestGateway();
    const { port } = tg.gateway;
    const conn = await connect(port);
    const sent = MAX_WAITING_REQUESTS + 3;
    conn.socket.write(Array.from({ length: sent }, () => chatRequest(3, 500)).join(''));
    await conn.closed;
    const text = conn.text();
    // The one being answered and the ones waiting are served; the next is refused, and the
    // connection closes after that answer: the requests behind it are never answered.
    expect(statuses(text)).toEqual([...Array.from({ length: MAX_WAITING_REQUESTS + 1 }, () => 200), 503]);
    expect((text.match(/data: \[DONE\]/g) ?? []).length).toBe(MAX_WAITING_REQUESTS + 1);
    const refusal = text.slice(text.lastIndexOf('HTTP/1.1 503 '));
    expect(refusal).toMatch(/\r\nConnection: close\r\n/i);
    expect(refusal).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(JSON.parse(refusal.slice(refusal.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ type: 'tidegate_error', code: 'ERR_TIDEGATE_PIPELINE_LIMIT' });
    expect(tg.sim.stats.requests).toBe(MAX_WAITING_REQUESTS + 1);
    await until(() => tg?.gateway.app.gateway.admission.streams === 0);

    const metrics = await connect(port);
    metrics.socket.write('GET /metrics HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n');
    await metrics.closed;
    const scraped = parsePrometheus(metrics.text().slice(metrics.text().indexOf('\r\n\r\n') + 4));
    expect(scraped.get('tidegate_admission_refusals_total{reason="pipelining"}')).toBe(1);
  });

  it('refuses a request whose turn comes while draining and starts none behind it', async () => {
    tg = await startTestGateway();
    const { port } = tg.gateway;
    const conn = await connect(port);
    conn.socket.write(chatRequest(20, 100) + chatRequest(3, 500) + chatRequest(3, 500));
    await until(() => conn.text().includes('data: '));
    const stopped = tg.gateway.shutdown(5000);
    await conn.closed;
    await stopped;
    const text = conn.text();
    // The stream running when the drain began finishes; the next request is refused with
    // `Connection: close`, so the last one is never answered, nor sent upstream.
    expect(statuses(text)).toEqual([200, 503]);
    expect(text).toContain('data: [DONE]');
    expect(text.slice(text.indexOf('HTTP/1.1 503 '))).toContain('ERR_TIDEGATE_SHUTDOWN');
    expect(tg.sim.stats.requests).toBe(1);
    expect(tg.gateway.app.gateway.admission.streams).toBe(0);
});

  it('gives back the slots of pipelined Responses retrieves when the client leaves', async () => {
    tg = await startTestGateway({
      routes: [{ path: '/v1/responses', provider: 'openai', forwardHeaders: ['content-type', ...SIM_HEADERS], resume: { windowBytes: 65536, lingerMs: 100 } }],
    });
    const { port } = tg.gateway;
    const admission = tg.gateway.app.gateway.admission;
    const origin = await connect(port);
    const body = JSON.stringify({ model: 'sim-synthetic-100000', stream: true, input: 'hi' });
    origin.socket.write(`POST /v1/responses HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nx-sim-tokens-per-second: 5\r\n\r\n${body}`);
    await until(() => /"id":"(resp_[^"]+)"/.test(origin.text()));
    const id = /"id":"(resp_[^"]+)"/.exec(origin.text())?.[1] ?? '';
    expect(admission.streams).toBe(1);

    const conn = await connect(port);
    conn.socket.write(Array.from({ length: 4 }, () => `GET /v1/responses/${id}?stream=true HTTP/1.1\r\nHost: gateway\r\n\r\n`).join(''));
    await until(() => conn.text().includes('data: '));
    await new Promise((r) => setTimeout(r, 100));
    // The retrieve being answered holds a slot; the ones waiting behind it hold none.
    expect(admission.streams).toBe(2);
    conn.socket.destroy();
    await until(() => admission.streams === 1);
    origin.socket.destroy();
    await until(() => admission.streams === 0);
  });
});
