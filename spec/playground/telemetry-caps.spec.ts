import { createRun, readSse, startPlayground, type Playground } from './helpers';

let pg: Playground | undefined;
afterEach(async () => {
  await pg?.close();
  pg = undefined;
});

const post = (p: Playground): Promise<Response> => fetch(`${p.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

describe('playground caps', () => {
  it('answers 429 with Retry-After beyond maxRunsPerClient, and takes a run again once one finished', async () => {
    pg = await startPlayground({ maxRunsPerClient: 2, maxConcurrentRuns: 10 });
    const first = await createRun(pg, {});
    await createRun(pg, {});
    const refused = await post(pg);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'ERR_TIDEGATE_PLAYGROUND_BUSY', message: expect.stringContaining('per client') });
    expect((await fetch(`${pg.url}/runs/${first.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await post(pg)).status).toBe(201);
  });

  it('answers 429 with Retry-After beyond maxTelemetrySubscribers of a run, and admits one again when a subscriber leaves', async () => {
    pg = await startPlayground({ maxTelemetrySubscribers: 2 });
    const run = await createRun(pg, {});
    const url = new URL(run.telemetryUrl, pg.url).href;
    const a = new AbortController();
    const b = new AbortController();
    const first = await fetch(url, { signal: a.signal });
    const second = await fetch(url, { signal: b.signal });
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await fetch(url);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('5');
    await third.text();
    a.abort();
    // The hub forgets the subscriber on its response's 'close'.
    const deadline = Date.now() + 5_000;
    let status = 429;
    while (status === 429 && Date.now() < deadline) {
      const again = await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
      status = again?.status ?? 0;
      if (status === 429) await again?.text();
      else void again?.body?.cancel();
      if (status === 429) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
    b.abort();
  });

  it('sends every subscriber of a run the same samples from one sampler, then the end', async () => {
    pg = await startPlayground({ telemetryIntervalMs: 20 });
    const run = await createRun(pg, { durationSec: 1 });
    const url = new URL(run.telemetryUrl, pg.url).href;
    const readers = [readSse(url, { untilEvent: 'end' }), readSse(url, { untilEvent: 'end' })];
    await new Promise((r) => setTimeout(r, 100));
    const stream = await fetch(new URL(run.streamUrl, pg.url).href);
    await stream.text();
    const [x, y] = await Promise.all(readers);
    expect(x.events.at(-1)?.event).toBe('end');
    expect(y.events.at(-1)).toEqual(x.events.at(-1));
    // Subscribed within the same tick or two: their later samples are the very same snapshots.
    const later = (e: { data: string }[]): string[] => e.slice(-5).map((s) => s.data);
    expect(later(y.events)).toEqual(later(x.events));
  });
});
