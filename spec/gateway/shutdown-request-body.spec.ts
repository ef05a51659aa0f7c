import net from 'node:net';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSimulator, type Simulator } from '../../src/simulator';
import { waitFor } from '../harness/net';
import { CaptureTransport } from './helpers';

// A request still sending its body when the drain starts is not relayed: it gets 503
// ERR_TIDEGATE_SHUTDOWN in its client's protocol, with Retry-After and Connection: close, and
// the gateway logs one `refused` line for it.

describe('a request body still arriving at shutdown', () => {
  let sim: Simulator;
  let gw: RunningGateway;
  let logs: CaptureTransport;

  beforeEach(async () => {
    sim = createSimulator({ tokensPerSecond: 100, ttftMs: 0 });
    const { url } = await sim.listen(0, '127.0.0.1');
    logs = new CaptureTransport();
    gw = await startGateway(parseConfig({ port: 0, upstream: { url } }), { logger: createLogger({ transports: [logs] }) });
  });
  afterEach(async () => {
    await gw.close();
    await sim.close();
  });

  it.each([
    ['/v1/chat/completions', {}, { error: { code: 'ERR_TIDEGATE_SHUTDOWN', type: 'tidegate_error' } }],
    ['/v1/messages', { 'anthropic-version': '2023-06-01' }, { type: 'error', error: { type: 'overloaded_error' } }],
  ])('%s gets 503 in its protocol and one log line', async (path, headers, shape) => {
    const arrived = new Promise<void>((r) => gw.server.once('request', () => r()));
    const socket = net.connect(gw.port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('error', () => undefined);
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    // Half of a 200-byte body: the gateway is reading it when the drain starts.
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n${extra}\r\n{"model":"sim","stream":true,`);
    await arrived;
    // The upload holds no stream slot.
    expect(gw.app.gateway.admission.streams).toBe(0);
    const stopped = gw.shutdown(2000);
    await waitFor(() => answer.includes('\r\n\r\n') && answer.trimEnd().endsWith('}'));
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 503 /);
    expect(head).toMatch(/\r\nConnection: close\r\n/i);
    expect(head).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(JSON.parse(body)).toMatchObject(shape);
    await stopped;
    expect(logs.lines.filter((l) => l.message === 'refused')).toEqual([expect.objectContaining({ route: path, method: 'POST', status: 503, errorCode: 'ERR_TIDEGATE_SHUTDOWN', bodyComplete: false })]);
    socket.destroy();
  });

  it('logs bodyComplete: true for a request that came whole while draining', async () => {
    // A running stream keeps the drain in its grace, the gateway still answering.
    const running = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sim-tokens-per-second': '20' }, body: JSON.stringify({ model: 'sim-synthetic-40', stream: true, messages: [] }) });
    await waitFor(() => gw.app.gateway.activeStreams === 1);
    const stopped = gw.shutdown(5000);
    const body = JSON.stringify({ model: 'sim', stream: true, messages: [] });
    const socket = net.connect(gw.port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('error', () => undefined);
    // Head and body in one write, as curl -d sends a small body.
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await waitFor(() => answer.trimEnd().endsWith('}'));
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    await waitFor(() => logs.lines.some((l) => l.message === 'refused'));
    expect(logs.lines.filter((l) => l.message === 'refused')).toEqual([expect.objectContaining({ route: '/v1/chat/completions', status: 503, errorCode: 'ERR_TIDEGATE_SHUTDOWN', bodyComplete: true })]);
    socket.destroy();
    await (await running).text();
    await stopped;
  });
});
