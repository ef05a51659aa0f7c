import OpenAI from 'openai';
import { waitFor } from '../harness/net';
import { parsePrometheus, startTestGateway, type TestGateway } from './helpers';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

async function scrape(): Promise<Map<string, number>> {
  const res = await fetch(`${t.gateway.url}/metrics`);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parsePrometheus(await res.text());
}

const R = 'route="/v1/chat/completions"';

describe('gateway /metrics', () => {
  it('parses as Prometheus text with every gateway metric declared', async () => {
    const res = await fetch(`${t.gateway.url}/metrics`);
    const text = await res.text();
    parsePrometheus(text);
    for (const name of [
      'tidegate_active_streams',
      'tidegate_upstream_requests_total',
      'tidegate_streams_total',
      'tidegate_overflow_terminations_total',
      'tidegate_bytes_out_total',
      'tidegate_buffered_bytes',
      'tidegate_upstream_paused_streams',
      'tidegate_time_to_first_token_seconds',
      'tidegate_stream_duration_seconds',
      'tidegate_upstream_retries_total',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    // Every outcome upstreamOutcome() can emit, plus ok.
    const help = /^# HELP tidegate_upstream_requests_total (.*)$/m.exec(text)?.[1] ?? '';
    for (const outcome of ['ok', 'http_<status>', 'unreachable', 'reset', 'timeout', 'aborted', 'error']) expect(help).toContain(outcome);
  });

  it('counts a completed stream: upstream ok, stream completed, bytes out, ttft and duration observed', async () => {
    const before = await scrape();
    const client = new OpenAI({ baseURL: `${t.gateway.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'sim-basic', stream: true, messages: [] });
    for await (const _ of stream) void _;
    await waitFor(() => t.logs.streams().length > 0, 2000);
    const after = await scrape();
    const delta = (key: string): number => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    expect(delta(`tidegate_upstream_requests_total{${R},outcome="ok"}`)).toBe(1);
    expect(delta(`tidegate_streams_total{${R},outcome="completed"}`)).toBe(1);
    expect(delta(`tidegate_bytes_out_total{${R}}`)).toBeGreaterThan(1000);
    expect(delta(`tidegate_time_to_first_token_seconds_count{${R}}`)).toBe(1);
    expect(delta(`tidegate_stream_duration_seconds_count{${R},outcome="completed"}`)).toBe(1);
    expect(after.get(`tidegate_active_streams{${R}}`)).toBe(0);
  });

  it('shows a running stream as active, then not', async () => {
    const res = await fetch(`${t.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-tokens-per-second': '50' },
      body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [] }),
    });
    expect((await scrape()).get(`tidegate_active_streams{${R}}`)).toBe(1);
    await res.text();
    await waitFor(() => t.gateway.app.gateway.activeStreams === 0, 2000);
    expect((await scrape()).get(`tidegate_active_streams{${R}}`)).toBe(0);
  });

  it('counts an upstream HTTP error by status', async () => {
    const before = await scrape();
    const res = await fetch(`${t.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': 'status:404' },
      body: JSON.stringify({ model: 'sim', stream: true, messages: [] }),
    });
    expect(res.status).toBe(404);
    const after = await scrape();
    expect((after.get(`tidegate_upstream_requests_total{${R},outcome="http_404"}`) ?? 0) - (before.get(`tidegate_upstream_requests_total{${R},outcome="http_404"}`) ?? 0)).toBe(1);
    expect((after.get(`tidegate_streams_total{${R},outcome="upstream_error"}`) ?? 0) - (before.get(`tidegate_streams_total{${R},outcome="upstream_error"}`) ?? 0)).toBe(1);
  });
});

describe('gateway health', () => {
  it('answers /healthz and /readyz with 200 while serving', async () => {
    expect((await fetch(`${t.gateway.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${t.gateway.url}/readyz`)).status).toBe(200);
  });
});

describe('gateway policies', () => {
  let p: TestGateway;
  afterEach(() => p.close());

  it('applies a user-written operator chain given when embedding', async () => {
    const { filter } = await import('../../src/flow/operators/filter');
    p = await startTestGateway({
      policies: {
        // Drop the role-only first chunk: a typed chain over GatewayEvent.
        '/v1/chat/completions': (events) => events.pipe(filter((e) => e.type !== 'frame' || !e.wire.data?.includes('"role"'))),
      },
    });
    const res = await fetch(`${p.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [] }),
    });
    const text = await res.text();
    expect(text).not.toContain('"role"');
    expect(text).toContain('"delta":{"content"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
