import { sleep } from '../harness/net';
import { createRun, readSse, startPlayground, telemetry, type Playground } from './helpers';

let pg: Playground | undefined;
const aborts: AbortController[] = [];
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort();
  await pg?.close();
  pg = undefined;
});

function origin(p: Playground): string {
  return new URL(p.url).origin;
}

/** Opens the run's data stream in the background (the "browser" reading it at full speed). */
function openStream(p: Playground, streamUrl: string): { text: Promise<string>; abort: AbortController } {
  const abort = new AbortController();
  aborts.push(abort);
  const text = readSse(new URL(streamUrl, origin(p)).href, { signal: abort.signal, timeoutMs: 30_000 }).then(
    (r) => r.text,
    // A stalled stream's socket is destroyed by the bridge: the reader sees a reset, by design.
    (err: unknown) => `[reset: ${String(err)}]`,
  );
  return { text, abort };
}

describe('playgroundRouter', () => {
  it('serves the page and its assets from the mount point, with a same-origin CSP', async () => {
    pg = await startPlayground();
    const page = await fetch(pg.url);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('src="/playground/assets/app.js"');
    expect(html).not.toMatch(/https?:\/\//); // nothing from a CDN
    const js = await fetch(`${pg.url}/assets/app.js`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const css = await fetch(`${pg.url}/assets/app.css`);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('ships a page script that parses as plain ES2020 without modules', async () => {
    pg = await startPlayground();
    const js = await (await fetch(`${pg.url}/assets/app.js`)).text();
    expect(() => new Function(js)).not.toThrow();
    expect(js).not.toMatch(/\bimport\s|\bexport\s|require\(/);
  });

  it('rejects an invalid scenario with 400 and a typed code', async () => {
    pg = await startPlayground();
    const res = await fetch(`${pg.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ producerTokensPerSec: 1_000_000, buffer: { overflow: 'explode' } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('ERR_TIDEGATE_PLAYGROUND_SCENARIO');
    expect(body.error.message).toContain('producerTokensPerSec');
  });

  it('answers 429 beyond maxConcurrentRuns', async () => {
    pg = await startPlayground({ maxConcurrentRuns: 1 });
    await createRun(pg, {});
    const res = await fetch(`${pg.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('5');
  });

  it('answers 404 for an unknown run', async () => {
    pg = await startPlayground();
    expect((await fetch(`${pg.url}/runs/nope/telemetry`)).status).toBe(404);
    expect((await fetch(`${pg.url}/runs/nope/stream`)).status).toBe(404);
  });

  it("terminates a stalled client's stream without ever holding more than the byte budget", async () => {
    pg = await startPlayground();
    const budgetBytes = 32 * 1024;
    const run = await createRun(pg, {
      producerTokensPerSec: 1000,
      consumerBytesPerSec: 0,
      strategy: 'buffer',
      buffer: { bounded: true, overflow: 'terminate' },
      budgetBytes,
    });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    const all = await samples;
    const last = all[all.length - 1];
    expect(last.state).toBe('finished');
    expect(last.outcome).toMatchObject({ outcome: 'overflow', code: 'ERR_TIDEGATE_OVERFLOW' });
    expect(last.notes.map((n) => n.kind)).toContain('overflow');
    expect(last.peakHeldBytes).toBeGreaterThan(budgetBytes / 2); // it did fill up
    expect(last.peakHeldBytes).toBeLessThanOrEqual(budgetBytes);
    expect(Math.max(...all.map((s) => s.heldBytes))).toBeLessThanOrEqual(budgetBytes);
  });

  it('pauses the producer under pure demand when the client stalls, then ends the stalled stream', async () => {
    pg = await startPlayground({ stallTimeoutMs: 1_500 });
    const run = await createRun(pg, { producerTokensPerSec: 1000, consumerBytesPerSec: 0, strategy: 'none', durationSec: 30 });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    const all = await samples;
    const last = all[all.length - 1];
    expect(all.some((s) => s.producer.paused)).toBe(true);
    expect(last.outcome).toMatchObject({ outcome: 'stalled', code: 'ERR_TIDEGATE_STALLED' });
    // Paused, not buffering: a 16 KiB socket plus one bridge batch, far below 1000 tokens/s × 1.5 s.
    expect(last.producer.emitted).toBeLessThan(200);
    expect(last.peakHeldBytes).toBeLessThanOrEqual(last.budgetBytes);
  });

  it('reports unbounded demand (null) at the producer under an onBackpressure operator', async () => {
    pg = await startPlayground({ stallTimeoutMs: 1_000 });
    const run = await createRun(pg, { consumerBytesPerSec: 0, strategy: 'drop', durationSec: 5 });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    const all = await samples;
    const running = all.filter((s) => s.state === 'running' && s.producer.emitted > 0);
    expect(running.length).toBeGreaterThan(0);
    expect(running[0].stages[0].outstanding).toBeNull();
    expect(all[all.length - 1].dropped).toBeGreaterThan(0);
  });

  it('stops an unbounded buffer at the demo cap', async () => {
    pg = await startPlayground({ unboundedCapBytes: 64 * 1024, stallTimeoutMs: 0 });
    const run = await createRun(pg, { producerTokensPerSec: 2000, consumerBytesPerSec: 0, strategy: 'buffer', buffer: { bounded: false } });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    const all = await samples;
    const last = all[all.length - 1];
    expect(last.outcome).toMatchObject({ outcome: 'demo-cap', code: 'ERR_TIDEGATE_PLAYGROUND_CAP' });
    expect(last.notes.map((n) => n.kind)).toContain('cap');
    expect(last.peakHeldBytes).toBeGreaterThan(64 * 1024); // unbounded: past the stream budget
  });

  it("delivers the parked backlog before the error with overflow 'error' (Reactor ERROR)", async () => {
    pg = await startPlayground();
    const run = await createRun(pg, {
      producerTokensPerSec: 1000,
      consumerBytesPerSec: 64 * 1024,
      strategy: 'buffer',
      buffer: { bounded: true, overflow: 'error' },
      budgetBytes: 32 * 1024,
    });
    const samples = telemetry(run, origin(pg));
    const stream = openStream(pg, run.streamUrl);
    const all = await samples;
    const text = await stream.text;
    const atOverflow = all.find((s) => s.overflowed > 0);
    const last = all[all.length - 1];
    expect(atOverflow).toBeDefined();
    const parked = atOverflow!.stages.find((s) => s.name.startsWith('onBackpressureBuffer'))!.bufferedBytes;
    expect(parked).toBeGreaterThan(0);
    expect(last.bridgeBytes).toBeGreaterThanOrEqual(atOverflow!.bridgeBytes + parked);
    expect(last.outcome).toMatchObject({ outcome: 'overflow' });
    expect(text.trimEnd().endsWith('}')).toBe(true);
    expect(text.lastIndexOf('event: error')).toBeGreaterThan(text.lastIndexOf('chat.completion.chunk'));
  });

  it('cancels the chain when the browser leaves', async () => {
    pg = await startPlayground();
    const run = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const samples = telemetry(run, origin(pg));
    const stream = openStream(pg, run.streamUrl);
    await sleep(300);
    stream.abort.abort();
    const all = await samples;
    expect(all[all.length - 1].outcome).toMatchObject({ outcome: 'client_closed' });
    expect(pg.router.activeRuns).toBe(0);
  });

  it.each(['stream', 'telemetry', 'watch'])('answers HEAD on a run %s with 405 and Allow: GET, and neither starts nor subscribes', async (endpoint) => {
    pg = await startPlayground({ maxTelemetrySubscribers: 1 });
    const run = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const url = endpoint === 'watch' ? `${pg.url}/watch?run=${run.id}` : `${pg.url}/runs/${run.id}/${endpoint}`;
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
    await sleep(100);
    const sample = (await (await fetch(`${pg.url}/runs/${run.id}`)).json()) as { state: string };
    expect(sample.state).toBe('waiting');
    // Its one telemetry seat is free.
    const seat = new AbortController();
    aborts.push(seat);
    expect((await fetch(run.telemetryUrl.startsWith('http') ? run.telemetryUrl : `${origin(pg)}${run.telemetryUrl}`, { signal: seat.signal })).status).toBe(200);
    // The run is still there to be streamed, once.
    const stream = openStream(pg, run.streamUrl);
    await sleep(200);
    expect(((await (await fetch(`${pg.url}/runs/${run.id}`)).json()) as { state: string }).state).toBe('running');
    stream.abort.abort();
  });

  it('stops a run on DELETE', async () => {
    pg = await startPlayground();
    const run = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    await sleep(300);
    expect((await fetch(`${pg.url}/runs/${run.id}`, { method: 'DELETE' })).status).toBe(204);
    const all = await samples;
    expect(all[all.length - 1].outcome).toMatchObject({ outcome: 'stopped' });
  });

  it('close() stops every run and refuses new ones', async () => {
    pg = await startPlayground();
    const run = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const samples = telemetry(run, origin(pg));
    openStream(pg, run.streamUrl);
    await sleep(300);
    pg.router.close();
    const all = await samples;
    expect(all[all.length - 1].state).toBe('finished');
    expect(pg.router.activeRuns).toBe(0);
    expect((await fetch(`${pg.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(503);
  });
});
