import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen, waitFor } from '../harness/net';
import { CaptureTransport } from './helpers';

// Requests admitted before the drain whose upstream had not answered when it began: whatever
// they are answered with (the shutdown's 503, or the upstream's answer within the grace) tells a
// kept-alive client to go elsewhere, as every answer of the drain does.

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

/** A POST on a kept-alive connection: the client itself would keep it. */
function post(agent: http.Agent, port: number, body: Record<string, unknown>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ method: 'POST', host: '127.0.0.1', port, path: '/v1/chat/completions', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body: text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('an answer still awaited from the upstream when the drain begins', () => {
  let gw: RunningGateway | undefined;
  let upstream: Awaited<ReturnType<typeof listen>> | undefined;
  const agent = new http.Agent({ keepAlive: true });
  /** Upstream requests not answered yet. */
  const held: http.ServerResponse[] = [];

  beforeEach(async () => {
    upstream = await listen((req, res) => {
      req.resume();
      held.push(res);
    });
    const config = parseConfig({ port: 0, upstream: { url: upstream.url }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterEach(async () => {
    for (const res of held.splice(0)) res.destroy();
    await gw?.close();
    await upstream?.close();
    agent.destroy();
  });

  it.each([true, false])('is the 503 ERR_TIDEGATE_SHUTDOWN with Connection: close once the grace is over (stream: %s)', async (stream) => {
    const answer = post(agent, (gw as RunningGateway).port, { model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => held.length === 1);
    await (gw as RunningGateway).shutdown(100);
    const got = await answer;
    expect(got.status).toBe(503);
    expect(JSON.parse(got.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_SHUTDOWN' } });
    expect(got.connection).toBe('close');
  });

  // 2^31 ms is past the longest timer Node keeps: one that long would fire after 1 ms.
  it.each([5000, 2 ** 31])("is the upstream's stream with Connection: close when it answers within the grace (graceMs %d)", async (graceMs) => {
    const answer = post(agent, (gw as RunningGateway).port, { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => held.length === 1);
    const stopped = (gw as RunningGateway).shutdown(graceMs);
    await waitFor(() => !(gw as RunningGateway).app.gateway.ready);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((gw as RunningGateway).app.gateway.activeStreams).toBe(1);
    const res = held[0] as http.ServerResponse;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n');
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body).toContain('data: [DONE]');
    expect(got.connection).toBe('close');
    await stopped;
  });
});
