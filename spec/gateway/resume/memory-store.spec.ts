import { fromIterable } from '../../../src/flow/sources/iterable';
import { FINISHED_STREAM_BYTES, MemoryResumeStore } from '../../../src/gateway/resume/memory-store';
import type { ReplayStream } from '../../../src/gateway/resume/replay-stream';
import { DEFAULT_RESUME, type ResumeSettings } from '../../../src/gateway/resume/settings';
import type { SseEventInit } from '../../../src/sse';

/** Opens a stream of `n` events of ~110 bytes in `store` and reads it to its end. */
async function finished(store: MemoryResumeStore, id: string, n: number, settings: Partial<ResumeSettings> = {}): Promise<void> {
  const events = fromIterable<SseEventInit>(Array.from({ length: n }, (_, i) => ({ data: `${id}-${i}`.padEnd(64, '.') })));
  const stream = store.open(events, { streamId: id, routePath: '/r', credentialHash: '', settings: { ...DEFAULT_RESUME, ...settings } });
  await new Promise<void>((resolve, reject) => stream.reader(0).subscribe({ complete: resolve, error: reject }));
}

const id = (k: number): string => String(k).repeat(32).slice(0, 32);

describe('MemoryResumeStore', () => {
  it('keeps all logs within maxBytes by dropping finished streams, oldest first', async () => {
    // Each finished stream: ~1.7 KB of log and FINISHED_STREAM_BYTES of objects; two fit, three do not.
    const store = new MemoryResumeStore({ maxBytes: 2 * FINISHED_STREAM_BYTES + 6000 });
    await finished(store, id(1), 15);
    await finished(store, id(2), 15);
    expect(await store.find(id(1))).toBeDefined();
    await finished(store, id(3), 15);
    expect(store.logBytes()).toBeLessThanOrEqual(2 * FINISHED_STREAM_BYTES + 6000);
    expect(await store.find(id(1))).toBeUndefined();
    expect(await store.find(id(2))).toBeDefined();
    expect(await store.find(id(3))).toBeDefined();
    await store.close();
    expect(store.logBytes()).toBe(0);
  });

  it("counts each finished stream's objects in maxBytes: a flood of one-event streams keeps the newest that fit", async () => {
    const maxBytes = 16 * FINISHED_STREAM_BYTES;
    const store = new MemoryResumeStore({ maxBytes });
    for (let k = 0; k < 100; k++) await finished(store, String(k).padStart(32, '0'), 1);
    const kept: number[] = [];
    for (let k = 0; k < 100; k++) if ((await store.find(String(k).padStart(32, '0'))) !== undefined) kept.push(k);
    // Each takes FINISHED_STREAM_BYTES and its ~120-byte log: 15 fit under 16 of them.
    expect(kept).toEqual(Array.from({ length: 15 }, (_, i) => 85 + i));
    expect(store.logBytes()).toBeLessThanOrEqual(maxBytes);
    expect(store.logBytes()).toBeGreaterThan(15 * FINISHED_STREAM_BYTES);
    await store.close();
    expect(store.logBytes()).toBe(0);
  });

  it('forgets a finished stream retentionMs after it ended', async () => {
    const store = new MemoryResumeStore({ maxBytes: 1 << 20 });
    await finished(store, id(4), 3, { retentionMs: 50 });
    expect(await store.find(id(4))).toBeDefined();
    await new Promise((r) => setTimeout(r, 120));
    expect(await store.find(id(4))).toBeUndefined();
    expect(store.logBytes()).toBe(0);
  });
});

/** An endless source of ~1 KiB events, counting what was requested of it. */
function endless(tag: string): { flow: ReturnType<typeof fromIterable<SseEventInit>>; produced: () => number } {
  let n = 0;
  function* gen(): Generator<SseEventInit> {
    for (;;) yield { data: `${tag}-${n++}`.padEnd(1000, '.') };
  }
  return { flow: fromIterable<SseEventInit>(gen()), produced: () => n };
}

/** Takes the stream's first event, then leaves: the stream is detached. */
function takeOneAndLeave(stream: ReplayStream): void {
  const sub = stream.reader(0).subscribeWithDemand({ next: () => sub.cancel() });
  sub.request(1);
}

/** Reads up to `n` events after `after`; resolves with them and the error, if one ended it. */
function readSome(stream: ReplayStream, after: number, n: number): Promise<{ texts: string[]; error: unknown }> {
  return new Promise((resolve) => {
    const texts: string[] = [];
    const sub = stream.reader(after).subscribeWithDemand({
      next: (b) => {
        texts.push(b.toString());
        if (texts.length === n) {
          sub.cancel();
          resolve({ texts, error: undefined });
        }
      },
      error: (error) => resolve({ texts, error }),
      complete: () => resolve({ texts, error: undefined }),
    });
    sub.request(n);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('MemoryResumeStore: maxBytes with running streams', () => {
  const settings = (windowBytes: number): ResumeSettings => ({ ...DEFAULT_RESUME, windowBytes, lingerMs: 60_000 });

  it('keeps many detached streams under maxBytes: their read-ahead pauses their upstreams', async () => {
    const maxBytes = 64 * 1024;
    const store = new MemoryResumeStore({ maxBytes });
    const sources = [];
    let highest = 0;
    for (let k = 0; k < 20; k++) {
      const src = endless(`s${k}`);
      sources.push(src);
      takeOneAndLeave(store.open(src.flow, { streamId: `s${k}x`.padEnd(32, '0'), routePath: '/r', credentialHash: '', settings: settings(16 * 1024) }));
      highest = Math.max(highest, store.logBytes());
    }
    for (let i = 0; i < 20; i++) {
      await sleep(10);
      highest = Math.max(highest, store.logBytes());
    }
    expect(store.detachedStreams()).toBe(20);
    expect(highest).toBeLessThanOrEqual(maxBytes);
    // Without the cap each would read 16 KiB ahead (~17 events): 340 events in all.
    expect(sources.reduce((n, s) => n + s.produced(), 0)).toBeLessThan(100);
    store.cancelDetached();
    await store.close();
  });

  it('serves a resumer of a paused detached stream its events in order, then lets it read on', async () => {
    const maxBytes = 32 * 1024;
    const store = new MemoryResumeStore({ maxBytes });
    const streams: ReplayStream[] = [];
    for (let k = 0; k < 8; k++) {
      const stream = store.open(endless(`p${k}`).flow, { streamId: `p${k}x`.padEnd(32, '0'), routePath: '/r', credentialHash: '', settings: settings(16 * 1024) });
      streams.push(stream);
      takeOneAndLeave(stream);
    }
    await sleep(50);
    expect(store.logBytes()).toBeLessThanOrEqual(maxBytes);
    const { texts, error } = await readSome(streams[7], 1, 40);
    expect(error).toBeUndefined();
    expect(texts).toHaveLength(40);
    texts.forEach((t, i) => expect(t).toContain(`data: p7-${i + 1}.`));
    expect(store.logBytes()).toBeLessThanOrEqual(maxBytes);
    store.cancelDetached();
    await store.close();
  });

  it('ends a stream whose event cannot fit with ERR_TIDEGATE_RESUME_STORE_FULL, which a resume replays after its logged events', async () => {
    const store = new MemoryResumeStore({ maxBytes: 8 * 1024 });
    const sizes = [100, 100, 100, 20_000];
    const events = fromIterable<SseEventInit>(sizes.map((n, i) => ({ data: `${i}`.padEnd(n, '.') })));
    const stream = store.open(events, { streamId: 'f'.repeat(32), routePath: '/r', credentialHash: '', settings: settings(64 * 1024) });
    const first = await readSome(stream, 0, 10);
    expect(first.error).toMatchObject({ code: 'ERR_TIDEGATE_RESUME_STORE_FULL', status: 503 });
    expect(first.texts).toHaveLength(3);
    expect(store.logBytes()).toBeLessThanOrEqual(8 * 1024);
    const again = await readSome(stream, 1, 10);
    expect(again.texts).toEqual(first.texts.slice(1));
    expect(again.error).toMatchObject({ code: 'ERR_TIDEGATE_RESUME_STORE_FULL' });
    store.cancelDetached();
    await store.close();
  });
});

describe('MemoryResumeStore aliases', () => {
  const aliasOf = (event: Buffer): string | undefined => /alias=(\w+)/.exec(event.toString())?.[1];
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  /** Runs a stream whose one event names `alias`, kept `retentionMs` after it ends. */
  async function named(store: MemoryResumeStore, streamId: string, alias: string, retentionMs: number): Promise<void> {
    const events = fromIterable<SseEventInit>([{ data: `alias=${alias}` }]);
    const stream = store.open(events, { streamId, routePath: '/r', credentialHash: '', settings: { ...DEFAULT_RESUME, retentionMs } }, { aliasOf });
    await new Promise<void>((resolve, reject) => stream.reader(0).subscribe({ complete: resolve, error: reject }));
  }

  it('resolves an alias to the one stream that named it', async () => {
    const store = new MemoryResumeStore({ maxBytes: 1 << 20 });
    await named(store, id(1), 'solo', 10_000);
    expect(await store.resolve('solo')).toBe(id(1));
    expect(store.reused('solo')).toBe(false);
    await store.close();
  });

  it('resolves an alias two held streams named to neither until both are dropped', async () => {
    const reused: string[] = [];
    const store = new MemoryResumeStore({ maxBytes: 1 << 20, onAliasReused: (alias) => reused.push(alias) });
    await named(store, id(1), 'a', 40);
    await named(store, id(2), 'a', 250);
    expect(await store.resolve('a')).toBeUndefined();
    expect(store.reused('a')).toBe(true);
    expect(reused).toEqual(['a']);
    await sleep(120);
    // The first stream is gone; the alias still names neither (the first client may ask by it).
    expect(await store.find(id(1))).toBeUndefined();
    expect(await store.find(id(2))).toBeDefined();
    expect(await store.resolve('a')).toBeUndefined();
    await sleep(250);
    expect(await store.find(id(2))).toBeUndefined();
    expect(store.reused('a')).toBe(false);
    await named(store, id(3), 'a', 10_000);
    expect(await store.resolve('a')).toBe(id(3));
    await store.close();
  });
});
