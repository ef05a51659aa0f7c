import { fromIterable } from '../../../src/flow/sources/iterable';
import { MemoryResumeStore } from '../../../src/gateway/resume/memory-store';
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
    const store = new MemoryResumeStore({ maxBytes: 4000 });
    await finished(store, id(1), 15);
    await finished(store, id(2), 15);
    expect(await store.find(id(1))).toBeDefined();
    await finished(store, id(3), 15);
    expect(store.logBytes()).toBeLessThanOrEqual(4000);
    expect(await store.find(id(1))).toBeUndefined();
    expect(await store.find(id(2))).toBeDefined();
    expect(await store.find(id(3))).toBeDefined();
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
