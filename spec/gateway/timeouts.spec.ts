import { waitFor } from '../harness/net';
import { startTestGateway, type TestGateway } from './helpers';

let t: TestGateway;
const FWD = ['content-type', 'x-sim-fault', 'x-sim-fault-after', 'x-sim-ttft-ms', 'x-sim-tokens-per-second'];

beforeAll(async () => {
  t = await startTestGateway({
    routes: ['first', 'idle', 'total'].map((kind) => ({
      path: `/${kind}/v1/chat/completions`,
      provider: 'openai',
      upstreamPath: '/v1/chat/completions',
      forwardHeaders: FWD,
      timeouts: { firstByteMs: kind === 'first' ? 200 : 5000, idleMs: kind === 'idle' ? 200 : 5000, totalMs: kind === 'total' ? 400 : 10000 },
    })),
  });
});
afterAll(() => t.close());

async function call(kind: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${t.gateway.url}/${kind}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'sim-long', stream: true, messages: [] }),
  });
  return { status: res.status, text: await res.text() };
}

function lastError(text: string): { code: string; message: string } {
  const last = text.trimEnd().split('\n\n').at(-1) as string;
  return (JSON.parse(last.replace(/^data: /, '')) as { error: { code: string; message: string } }).error;
}

describe('gateway timeouts', () => {
  it('first-byte: an upstream that sends headers and then nothing gets ERR_TIDEGATE_TIMEOUT (first) and is aborted', async () => {
    const aborted = t.sim.stats.aborted;
    const { status, text } = await call('first', { 'x-sim-fault': 'hang' });
    expect(status).toBe(200);
    expect(lastError(text)).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', message: expect.stringMatching(/no byte within 200 ms/) });
    await waitFor(() => t.sim.stats.aborted > aborted, 2000);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'timeout', timeoutKind: 'first', errorCode: 'ERR_TIDEGATE_TIMEOUT' });
  });

  it('first-byte: before the status line it is an HTTP 504 in the provider shape', async () => {
    const aborted = t.sim.stats.aborted;
    const { status, text } = await call('first', { 'x-sim-ttft-ms': '3000' });
    expect(status).toBe(504);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'ERR_TIDEGATE_TIMEOUT' } });
    await waitFor(() => t.sim.stats.aborted > aborted, 2000);
  });

  it('idle: an upstream that stops mid-stream gets ERR_TIDEGATE_TIMEOUT (idle) and is aborted', async () => {
    const aborted = t.sim.stats.aborted;
    const { text } = await call('idle', { 'x-sim-fault': 'stall', 'x-sim-fault-after': '3' });
    expect(text).toContain('"delta":{"content"');
    expect(lastError(text)).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', message: 'idle timeout after 200 ms' });
    await waitFor(() => t.sim.stats.aborted > aborted, 2000);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'timeout', timeoutKind: 'idle' });
  });

  it('total: a stream still running at its total deadline gets ERR_TIDEGATE_TIMEOUT (total) and is aborted', async () => {
    const aborted = t.sim.stats.aborted;
    const { text } = await call('total', { 'x-sim-tokens-per-second': '20' });
    expect(text).toContain('"delta":{"content"');
    expect(lastError(text)).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', message: expect.stringMatching(/total time of 400 ms/) });
    await waitFor(() => t.sim.stats.aborted > aborted, 2000);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'timeout', timeoutKind: 'total' });
  });
});
