/**
 * Refusals answered outside the admission caps (the drain's 503) are
 * counted in `tidegate_admission_refusals_total` by reason and logged as `refused` lines within
 * the refusal log's rate limit, as the caps' own refusals are (src/gateway/admission.ts, record).
 */
import { REFUSAL_LINES_PER_SECOND } from '../../src/gateway/refusal-log';
import { waitFor } from '../harness/net';
import { parsePrometheus, startTestGateway, type TestGateway } from './helpers';

const FLOOD = 3 * REFUSAL_LINES_PER_SECOND;

let tg: TestGateway | undefined;
afterEach(async () => {
  await tg?.close();
  tg = undefined;
});

const lines = (message: string): Record<string, unknown>[] => (tg?.logs.lines ?? []).filter((l) => l.message === message);
const suppressed = (): number => lines('refusals suppressed').reduce((n, l) => n + (l.count as number), 0);

async function refusals(reason: string): Promise<number> {
  const text = await (tg as TestGateway).gateway.app.gateway.metrics.registry.metrics();
  return parsePrometheus(text).get(`tidegate_admission_refusals_total{reason="${reason}"}`) ?? 0;
}

/** The `refused` lines and the suppressed ones add up to `count`, at most two windows' lines written. */
async function expectCapped(count: number, errorCode: string): Promise<void> {
  await waitFor(() => lines('refused').length + suppressed() === count, 3000);
  expect(lines('refused').length).toBeLessThanOrEqual(2 * REFUSAL_LINES_PER_SECOND);
  expect(lines('refusals suppressed')[0]).toMatchObject({ byCode: { [errorCode]: expect.any(Number) }, windowMs: 1000 });
}

describe('refusals while the gateway drains', () => {
  it('are counted by reason shutdown and logged within the refusal rate limit', async () => {
    tg = await startTestGateway();
    const { url } = tg.gateway;
    // A running stream keeps the drain in its grace, the gateway still answering.
    const running = new AbortController();
    const stream = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-tokens-per-second': '20' },
      body: JSON.stringify({ model: 'sim-synthetic-400', stream: true, messages: [] }),
      signal: running.signal,
    });
    await waitFor(() => tg?.gateway.app.gateway.activeStreams === 1);
    const stopped = tg.gateway.shutdown(10_000);
    await waitFor(() => tg?.gateway.app.gateway.ready === false);
    const answers = await Promise.all(
      Array.from({ length: FLOOD }, () => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim', stream: true, messages: [] }) })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: FLOOD }, () => 503));
    await Promise.all(answers.map((a) => a.text()));
    await expectCapped(FLOOD, 'ERR_TIDEGATE_SHUTDOWN');
    expect(lines('refused')[0]).toMatchObject({ route: '/v1/chat/completions', method: 'POST', status: 503, errorCode: 'ERR_TIDEGATE_SHUTDOWN', reason: 'shutdown', bodyComplete: true });
    expect(await refusals('shutdown')).toBe(FLOOD);
    running.abort();
    await stream.then((r) => r.text()).catch(() => undefined);
    await stopped;
  });
});
