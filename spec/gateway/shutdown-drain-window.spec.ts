import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSimulator, type Simulator } from '../../src/simulator';
import { waitFor } from '../harness/net';
import { ask, CaptureTransport, type Answer } from './helpers';

/** A client that would keep its connection: only the gateway's answer closes it. */
const KEEP_ALIVE = { connection: 'keep-alive' };

// While streams drain after SIGTERM the gateway still accepts connections: a load balancer's
// probe of /readyz gets 503, a new stream request 503 with Retry-After in its client's protocol,
// each with Connection: close, as is a CORS preflight. Once the streams ended the listener closes.

describe('the shutdown drain window', () => {
  let sim: Simulator;
  let gw: RunningGateway;
  let stopped: Promise<void>;
  let streaming: Promise<Answer>;

  beforeAll(async () => {
    // One token a second: the stream outlasts the checks below, then the grace cuts it.
    sim = createSimulator({ tokensPerSecond: 1, ttftMs: 0 });
    const { url } = await sim.listen(0, '127.0.0.1');
    gw = await startGateway(parseConfig({ port: 0, upstream: { url }, limits: { retryAfterSeconds: 2 }, cors: { origins: ['https://app.example'] } }), { logger: createLogger({ transports: [new CaptureTransport()] }) });
    streaming = ask(gw.port, 'POST', '/v1/chat/completions', JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    await waitFor(() => gw.app.gateway.activeStreams === 1);
    stopped = gw.shutdown(1500);
    await waitFor(() => !gw.app.gateway.ready);
  });
  afterAll(async () => {
    await stopped;
    await sim.close();
  });

  it('answers /readyz 503 on a new connection', async () => {
    const got = await ask(gw.port, 'GET', '/readyz', undefined, KEEP_ALIVE);
    expect(got.status).toBe(503);
    expect(got.headers.connection).toBe('close');
    expect(JSON.parse(got.body)).toMatchObject({ status: 'shutting_down', activeStreams: 1 });
  });

  it("answers a new OpenAI stream request 503 with Retry-After, in OpenAI's shape", async () => {
    const got = await ask(gw.port, 'POST', '/v1/chat/completions', JSON.stringify({ model: 'sim', stream: true, messages: [] }), KEEP_ALIVE);
    expect([got.status, got.headers['retry-after'], got.headers.connection]).toEqual([503, '2', 'close']);
    expect(JSON.parse(got.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_SHUTDOWN', type: 'tidegate_error' } });
  });

  it("answers a new Anthropic stream request 503 with Retry-After, in Anthropic's shape", async () => {
    const got = await ask(gw.port, 'POST', '/v1/messages', JSON.stringify({ model: 'sim', stream: true, max_tokens: 5, messages: [] }), { 'anthropic-version': '2023-06-01', ...KEEP_ALIVE });
    expect([got.status, got.headers['retry-after'], got.headers.connection]).toEqual([503, '2', 'close']);
    expect(JSON.parse(got.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });

  it('answers a CORS preflight with Connection: close', async () => {
    const got = await ask(gw.port, 'OPTIONS', '/v1/chat/completions', undefined, { origin: 'https://app.example', 'access-control-request-method': 'POST', ...KEEP_ALIVE });
    expect(got.status).toBe(204);
    expect(got.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(got.headers.connection).toBe('close');
  });

  it('closes the listener once the streams ended', async () => {
    const cut = await streaming;
    expect(cut.body).toContain('ERR_TIDEGATE_SHUTDOWN');
    await stopped;
    await expect(ask(gw.port, 'GET', '/readyz')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
