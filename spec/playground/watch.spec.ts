import { EventEmitter } from 'node:events';
import { listen, sleep } from '../harness/net';
import { RunChannel } from '../../src/playground/watch';
import { createRun, readSse, startPlayground, type Playground } from './helpers';
import type { RunSample } from '../../src/playground';

let pg: Playground | undefined;
afterEach(async () => {
  await pg?.close();
  pg = undefined;
});

interface Watched {
  samples: Map<string, RunSample[]>;
  text: Map<string, string>;
  closed: Map<string, { reset: boolean }>;
  ended: Set<string>;
  events: string[];
}

/** Reads `GET /watch` for `ids` until the server ends it (bounded by `timeoutMs`), sorted by run. */
async function watch(p: Playground, ids: string[], options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Watched> {
  const query = ids.map((id) => `run=${encodeURIComponent(id)}`).join('&');
  const { events } = await readSse(`${p.url}/watch?${query}`, { timeoutMs: options.timeoutMs ?? 20_000, signal: options.signal });
  const out: Watched = { samples: new Map(), text: new Map(), closed: new Map(), ended: new Set(), events: events.map((e) => e.event) };
  for (const e of events) {
    const d = JSON.parse(e.data) as { id: string; text?: string; reset?: boolean };
    if (e.event === 'sample' || e.event === 'end') {
      out.samples.set(d.id, [...(out.samples.get(d.id) ?? []), d as unknown as RunSample]);
      if (e.event === 'end') out.ended.add(d.id);
    } else if (e.event === 'text') out.text.set(d.id, (out.text.get(d.id) ?? '') + d.text);
    else if (e.event === 'closed') out.closed.set(d.id, { reset: d.reset === true });
  }
  return out;
}

describe('GET /watch (one connection per page)', () => {
  it("starts both runs and carries each one's telemetry and received text on one response, then ends", async () => {
    pg = await startPlayground();
    const a = await createRun(pg, { label: 'A', consumerBytesPerSec: 64 * 1024, strategy: 'none', durationSec: 1 });
    const b = await createRun(pg, { label: 'B', consumerBytesPerSec: 64 * 1024, strategy: 'drop', durationSec: 1 });
    const w = await watch(pg, [a.id, b.id]);
    for (const run of [a, b]) {
      expect(w.ended.has(run.id)).toBe(true);
      const samples = w.samples.get(run.id)!;
      expect(samples.length).toBeGreaterThan(2);
      expect(samples[samples.length - 1]).toMatchObject({ state: 'finished', outcome: { outcome: 'completed' } });
      // What the emulated client read, byte for byte: the run's own SSE stream, whole events.
      const text = w.text.get(run.id)!;
      expect(text).toContain('chat.completion.chunk');
      expect(text.endsWith('\n\n')).toBe(true);
      expect(Buffer.byteLength(text)).toBe(samples[samples.length - 1].consumedBytes);
      expect(w.closed.get(run.id)).toEqual({ reset: false });
    }
    expect(pg.router.activeRuns).toBe(0);
  });

  it('ends every run as client_closed when the page leaves', async () => {
    pg = await startPlayground();
    const a = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const b = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const leave = new AbortController();
    const watching = watch(pg, [a.id, b.id], { signal: leave.signal });
    await sleep(500);
    leave.abort();
    await watching;
    await sleep(200);
    for (const run of [a, b]) {
      const sample = (await (await fetch(`${pg.url}/runs/${run.id}`)).json()) as RunSample;
      expect(sample).toMatchObject({ state: 'finished', outcome: { outcome: 'client_closed' } });
    }
    expect(pg.router.activeRuns).toBe(0);
  });

  it('sends a finished run its final sample and ends', async () => {
    pg = await startPlayground();
    const run = await createRun(pg, {});
    expect((await fetch(`${pg.url}/runs/${run.id}`, { method: 'DELETE' })).status).toBe(204);
    const w = await watch(pg, [run.id], { timeoutMs: 5_000 });
    expect(w.events).toEqual(['end']);
    expect(w.samples.get(run.id)![0]).toMatchObject({ state: 'finished', outcome: { outcome: 'stopped' } });
  });

  it('answers 404 for an unknown run and 400 without runs, before committing a stream', async () => {
    pg = await startPlayground();
    const run = await createRun(pg, {});
    const unknown = await fetch(`${pg.url}/watch?run=${run.id}&run=nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${pg.url}/watch`)).status).toBe(400);
    // The known run was not started by the refused request.
    expect(((await (await fetch(`${pg.url}/runs/${run.id}`)).json()) as RunSample).state).toBe('waiting');
  });

  it('answers 429 when a run already has maxTelemetrySubscribers', async () => {
    pg = await startPlayground({ maxTelemetrySubscribers: 1 });
    const run = await createRun(pg, { consumerBytesPerSec: 4096, durationSec: 30 });
    const leave = new AbortController();
    const first = watch(pg, [run.id], { signal: leave.signal });
    await sleep(300);
    const second = await fetch(`${pg.url}/watch?run=${run.id}`);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('5');
    leave.abort();
    await first;
  });
});

describe('RunChannel', () => {
  it('decodes UTF-8 split between two writes, and says whether the run ended or was reset', async () => {
    const euro = Buffer.from('a€b', 'utf8'); // € is 3 bytes: split it 1 + 2
    const server = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const one = new RunChannel('r1', res, new EventEmitter());
      one.write(euro.subarray(0, 2));
      one.write(euro.subarray(2));
      one.end();
      const two = new RunChannel('r2', res, new EventEmitter());
      two.write(Buffer.from('x'));
      two.destroy();
      res.end();
    });
    try {
      const { events } = await readSse(server.url, { timeoutMs: 5_000 });
      expect(events.map((e) => [e.event, JSON.parse(e.data)])).toEqual([
        ['text', { id: 'r1', text: 'a' }],
        ['text', { id: 'r1', text: '€b' }],
        ['closed', { id: 'r1', reset: false }],
        ['text', { id: 'r2', text: 'x' }],
        ['closed', { id: 'r2', reset: true }],
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('POST /runs validation', () => {
  it('names each refused field with its bound in the scenario units', async () => {
    pg = await startPlayground();
    const res = await fetch(`${pg.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ budgetBytes: 16 * 1024, producerTokensPerSec: 9000 }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { issues: { field: string; minimum?: number; maximum?: number }[] } };
    expect(body.error.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'budgetBytes', minimum: 32 * 1024 }),
        expect.objectContaining({ field: 'producerTokensPerSec', maximum: 5000 }),
      ]),
    );
  });
});
