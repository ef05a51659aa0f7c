import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { BUILTIN_TRANSCRIPTS, createSimulator, type Simulator } from '../../src/simulator';
import { RawClient, waitFor } from '../harness/net';
import { countingUpstream, type CountingUpstream } from '../harness/upstream';
import { CaptureTransport, parsePrometheus } from './helpers';

describe('gateway overflow: terminate', () => {
  let upstream: CountingUpstream;
  let gw: RunningGateway;
  let sim: Simulator;
  const logs = new CaptureTransport();
  const clients: RawClient[] = [];

  beforeAll(async () => {
    // A firehose for the stalled client, a model-paced upstream for the reading one.
    upstream = await countingUpstream({ eventBytes: 1000, totalBytes: 32 * 1024 * 1024 });
    sim = createSimulator({ tokensPerSecond: 2000, ttftMs: 5 });
    const { url } = await sim.listen(0, '127.0.0.1');
    const config = parseConfig({
      port: 0,
      upstream: { url },
      stream: { overflow: 'terminate', maxBufferedBytes: 64 * 1024 },
      routes: [
        { path: '/sse', provider: 'passthrough', url: upstream.url },
        { path: '/v1/chat/completions', provider: 'openai' },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await gw.close();
    await upstream.close();
    await sim.close();
  });

  it('ends the stalled stream with ERR_TIDEGATE_OVERFLOW and aborts its upstream while a reading stream completes', async () => {
    const stalled = await RawClient.request(gw.port, '/sse');
    const body = JSON.stringify({ model: 'sim-long', stream: true, messages: [] });
    const reader = await RawClient.request(gw.port, '/v1/chat/completions', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    clients.push(stalled, reader);
    reader.readAll();
    await waitFor(() => upstream.aborted >= 1, 10_000);
    expect(await reader.waitClosed(20_000)).toBe(true);
    expect(reader.text()).toMatch(/data: \[DONE\]\r?\n\r?\n(\r\n0\r\n\r\n)?$/);
    expect(reader.text().match(/"delta":\{"content"/g)).toHaveLength(BUILTIN_TRANSCRIPTS['sim-long'].tokens.length);
    expect(reader.text()).not.toContain('event: error');

    stalled.readAll();
    expect(await stalled.waitClosed(5000)).toBe(true);
    expect(stalled.text()).toMatch(/event: error\ndata: \{"code":"ERR_TIDEGATE_OVERFLOW","message":"[^"]+"\}\n\n(\r\n0\r\n\r\n)?$/);
    expect(upstream.aborted).toBe(1);

    const lines = logs.streams();
    expect(lines.map((l) => l.outcome).sort()).toEqual(['completed', 'overflow']);
    expect(lines.find((l) => l.outcome === 'overflow')).toMatchObject({ errorCode: 'ERR_TIDEGATE_OVERFLOW', route: '/sse' });
    const metrics = parsePrometheus(await (await fetch(`${gw.url}/metrics`)).text());
    expect(metrics.get('tidegate_overflow_terminations_total{route="/sse"}')).toBe(1);
  });
});
