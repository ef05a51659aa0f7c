/**
 * Refusals answered outside the admission caps (the drain's 503, a refused resume, a 405) are
 * counted in `tidegate_admission_refusals_total` by reason and logged as `refused` lines within
 * the refusal log's rate limit, as the caps' own refusals are (src/gateway/admission.ts, record).
 */
import { REFUSAL_LINES_PER_SECOND } from '../../src/gateway/refusal-log';
import { waitFor } from '../harness/net';
import { parsePrometheus, SIM_HEADERS, startTestGateway, type TestGateway } from './helpers';
import { chat, readSse } from './resume/helpers';

const FLOOD = 3 * REFUSAL_LINES_PER_SECOND;
const forwardHeaders = ['content-type', ...SIM_HEADERS];

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

describe('refused resumes', () => {
  beforeEach(async () => {
    tg = await startTestGateway({
      sim: { tokensPerSecond: 2000, ttftMs: 1 },
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
      routes: [{ path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: true }],
    });
  });

  it('of unknown stream ids (404) are counted by reason resume_not_found and logged within the refusal rate limit', async () => {
    const { url } = (tg as TestGateway).gateway;
    const answers = await Promise.all(Array.from({ length: FLOOD }, (_, i) => fetch(`${url}/v1/streams/${i.toString(16).padStart(32, '0')}`)));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: FLOOD }, () => 404));
    await Promise.all(answers.map((a) => a.text()));
    await expectCapped(FLOOD, 'ERR_TIDEGATE_STREAM_NOT_FOUND');
    expect(lines('refused')[0]).toMatchObject({ method: 'GET', status: 404, errorCode: 'ERR_TIDEGATE_STREAM_NOT_FOUND', reason: 'resume_not_found' });
    expect(lines('resume')).toEqual([]);
    expect(await refusals('resume_not_found')).toBe(FLOOD);
  });

  it('with another credential (403) are counted by reason resume_forbidden and logged as refused', async () => {
    const { url } = (tg as TestGateway).gateway;
    const started = await readSse(`${url}/v1/chat/completions`, { body: chat(), headers: { authorization: 'Bearer owner' } });
    await started.ended;
    const streamId = String(started.headers['x-tidegate-stream-id']);
    const other = await fetch(`${url}/v1/streams/${streamId}`, { headers: { authorization: 'Bearer someone-else' } });
    expect(other.status).toBe(403);
    await other.text();
    await waitFor(() => lines('refused').length === 1, 2000);
    expect(lines('refused')[0]).toMatchObject({ route: `/v1/streams/${streamId}`, method: 'GET', status: 403, errorCode: 'ERR_TIDEGATE_RESUME_FORBIDDEN', reason: 'resume_forbidden' });
    expect(JSON.stringify(lines('refused'))).not.toContain('someone-else');
    expect(await refusals('resume_forbidden')).toBe(1);
  });
});

describe('a method a relay route does not answer', () => {
  it.each([
    ['DELETE', '/v1/chat/completions'],
    ['PUT', '/v1/messages'],
  ])('%s %s gets 405, counted by reason method and logged as refused', async (method, path) => {
    tg = await startTestGateway();
    const answer = await fetch(`${tg.gateway.url}${path}`, { method });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('POST');
    await answer.text();
    await waitFor(() => lines('refused').length === 1, 2000);
    expect(lines('refused')[0]).toMatchObject({ route: path, method, status: 405, errorCode: 'ERR_TIDEGATE_METHOD_NOT_ALLOWED', reason: 'method' });
    expect(await refusals('method')).toBe(1);
  });

  it('HEAD on a passthrough stream route gets 405, counted by reason method and logged as refused', async () => {
    tg = await startTestGateway({ routes: [{ path: '/events', provider: 'passthrough', methods: ['GET'] }] });
    const answer = await fetch(`${tg.gateway.url}/events`, { method: 'HEAD' });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET');
    await waitFor(() => lines('refused').length === 1, 2000);
    expect(lines('refused')[0]).toMatchObject({ route: '/events', method: 'HEAD', status: 405, errorCode: 'ERR_TIDEGATE_METHOD_NOT_ALLOWED', reason: 'method' });
    expect(await refusals('method')).toBe(1);
  });
});

describe('a Responses retrieve of a response still streaming', () => {
  it('gets 409, counted by reason response_in_progress and logged as refused', async () => {
    tg = await startTestGateway({
      sim: { tokensPerSecond: 2000, ttftMs: 1 },
      config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
      routes: [{ path: '/v1/responses', provider: 'openai', forwardHeaders, resume: true }],
    });
    const { url } = tg.gateway;
    const running = await readSse(`${url}/v1/responses`, { body: { model: 'sim', input: 'hi', stream: true }, headers: { 'x-sim-tokens-per-second': '5' } });
    await running.atLeast(1);
    const id = (JSON.parse((running.events[0] as { data: string }).data) as { response: { id: string } }).response.id;
    const retrieved = await fetch(`${url}/v1/responses/${id}`);
    expect(retrieved.status).toBe(409);
    expect(((await retrieved.json()) as { error: { code: string } }).error.code).toBe('ERR_TIDEGATE_RESPONSE_IN_PROGRESS');
    await waitFor(() => lines('refused').length === 1, 2000);
    expect(lines('refused')[0]).toMatchObject({ route: `/v1/responses/${id}`, method: 'GET', status: 409, errorCode: 'ERR_TIDEGATE_RESPONSE_IN_PROGRESS', reason: 'response_in_progress' });
    expect(await refusals('response_in_progress')).toBe(1);
    running.drop();
  });
});
