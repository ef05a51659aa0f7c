import { startTestGateway, type TestGateway } from '../gateway/helpers';

let t: TestGateway;
let base: string;

beforeAll(async () => {
  t = await startTestGateway();
  base = `${t.gateway.url}/playground`;
});
afterAll(async () => {
  await t.close();
});

async function postRun(body: string): Promise<Response> {
  return fetch(`${base}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

async function waitFor(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('waitFor: timed out');
}

async function deleteAll(ids: string[]): Promise<void> {
  for (const id of ids) await fetch(`${base}/runs/${id}`, { method: 'DELETE' });
}

describe('playground API in the gateway', () => {
  it('refuses hostile scenario JSON with 400 and keeps serving', async () => {
    const hostile = [
      '{"producerTokensPerSec":1e308}',
      '{"producerTokensPerSec":-1}',
      '{"budgetBytes":1.5}',
      '{"durationSec":9007199254740993}',
      '{"__proto__":{"durationSec":1000}}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '[]',
      '{"limitRate":{"highTide":0}}',
      '{"strategy":"toString"}',
    ];
    for (const b of hostile) {
      const r = await postRun(b);
      expect([400, 201]).toContain(r.status);
      const json = (await r.json()) as { id?: string; scenario?: { durationSec: number } };
      if (r.status === 201) {
        expect(json.scenario!.durationSec).toBeLessThanOrEqual(60);
        await deleteAll([json.id!]);
      }
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await fetch(`${t.gateway.url}/healthz`)).status).toBe(200);
  });

  it('answers malformed or oversized JSON to POST /playground/runs with a JSON 400/413, not an HTML page with a stack trace', async () => {
    for (const body of ['{bad', '"x"', JSON.stringify({ label: 'x'.repeat(5000) })]) {
      const r = await postRun(body);
      const text = await r.text();
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.headers.get('content-type') ?? '').toMatch(/json/);
      expect(text).not.toMatch(/\n\s+at .*node_modules/);
    }
  });

  it('answers 100 concurrent POST /runs with at most maxConcurrentRuns 201s and 429 for the rest', async () => {
    const rs = await Promise.all(Array.from({ length: 100 }, () => postRun('{"durationSec":2}')));
    const statuses = rs.map((r) => r.status);
    const bodies = (await Promise.all(rs.map((r) => r.json()))) as { id?: string }[];
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(4);
    expect(statuses.every((s) => s === 201 || s === 429)).toBe(true);
    await deleteAll(bodies.filter((b) => b.id).map((b) => b.id!));
  });

  it('ends stream and telemetry, and frees the slot, when a streaming run is DELETEd', async () => {
    const r = await postRun('{"durationSec":30,"consumerBytesPerSec":0,"strategy":"buffer","buffer":{"bounded":false,"overflow":"terminate"}}');
    const run = (await r.json()) as { id: string; streamUrl: string; telemetryUrl: string };
    const streamP = fetch(`${t.gateway.url}${run.streamUrl}`, { signal: AbortSignal.timeout(15_000) }).then((x) => x.text());
    const telP = fetch(`${t.gateway.url}${run.telemetryUrl}`, { signal: AbortSignal.timeout(15_000) }).then((x) => x.text());
    await new Promise((res) => setTimeout(res, 300));
    expect((await fetch(`${base}/runs/${run.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${base}/runs/${run.id}`, { method: 'DELETE' })).status).toBeLessThan(500);
    await Promise.all([streamP.catch(() => ''), telP]);
    const sample = (await (await fetch(`${base}/runs/${run.id}`)).json()) as { state: string };
    expect(sample.state).toBe('finished');
    // a second stream on a stopped run is refused
    expect((await fetch(`${t.gateway.url}${run.streamUrl}`)).status).toBeGreaterThanOrEqual(400);
    await waitFor(async () => (await postRun('{"durationSec":1}').then(async (x) => { const j = (await x.json()) as { id?: string }; if (j.id) await deleteAll([j.id]); return x.status === 201; })), 3000);
  });

  it('refuses a second concurrent stream of the same run with 409', async () => {
    const run = (await (await postRun('{"durationSec":2}')).json()) as { id: string; streamUrl: string };
    const first = fetch(`${t.gateway.url}${run.streamUrl}`, { signal: AbortSignal.timeout(10_000) });
    await new Promise((res) => setTimeout(res, 100));
    const second = await fetch(`${t.gateway.url}${run.streamUrl}`);
    expect(second.status).toBe(409);
    await deleteAll([run.id]);
    await (await first).text().catch(() => '');
  });
});
