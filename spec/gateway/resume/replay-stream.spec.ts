import v8 from 'node:v8';
import vm from 'node:vm';
import { createFlow } from '../../../src/flow/sources/create';
import type { FlowSubscription } from '../../../src/flow/types';
import { ResumeGapError } from '../../../src/gateway/resume/errors';
import { ReplayStream } from '../../../src/gateway/resume/replay-stream';
import { ReplayWindow } from '../../../src/gateway/resume/window';
import type { SseEventInit } from '../../../src/sse';

/** A source of `data: e<n>` events (100 bytes of data each) that records what was requested. */
function source(count = 1000): { flow: ReturnType<typeof createFlow<SseEventInit>>; requested: () => number; emitted: () => number; cancelled: () => boolean } {
  let requested = 0;
  let emitted = 0;
  let cancelled = false;
  const flow = createFlow<SseEventInit>((sink) => {
    sink.onRequest((n) => {
      requested += n;
      while (sink.requested > 0 && emitted < count && !sink.isCancelled) sink.next({ data: `e${++emitted}`.padEnd(100, '.') });
      if (emitted === count) sink.complete();
    });
    sink.onCancel(() => (cancelled = true));
  });
  return { flow, requested: () => requested, emitted: () => emitted, cancelled: () => cancelled };
}

/** A reader that keeps what it got and asks only when told. */
function read(stream: ReplayStream, after = 0): { got: string[]; sub: FlowSubscription; done: () => string | undefined } {
  const got: string[] = [];
  let end: string | undefined;
  const sub = stream.reader(after).subscribeWithDemand({
    next: (b) => got.push(b.toString()),
    complete: () => (end = 'complete'),
    error: (e) => (end = String((e as Error).message)),
  });
  return { got, sub, done: () => end };
}

const ID = 'a'.repeat(32);

describe('ReplayWindow', () => {
  it('keeps maxBytes of history before the floor, and every event from the floor on', () => {
    const w = new ReplayWindow();
    for (let i = 0; i < 10; i++) w.append(Buffer.alloc(100));
    w.trim(350, 4);
    expect([w.firstSeq, w.lastSeq, w.bytes]).toEqual([1, 10, 1000]);
    w.trim(150, 4);
    expect([w.firstSeq, w.lastSeq, w.bytes]).toEqual([3, 10, 800]);
    expect(w.bytesBefore(4)).toBe(100);
    w.trim(350, Infinity);
    expect([w.firstSeq, w.bytes]).toEqual([8, 300]);
    expect(w.bytesAfter(8)).toBe(200);
    expect(w.get(7)).toBeUndefined();
  });
});

describe('ReplayStream', () => {
  it('keeps its log but nothing of its upstream once it ended', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    let held: WeakRef<object> | undefined;
    // The source's subscription holds a large object, as a relay's chain holds its sockets and bridge.
    const flow = createFlow<SseEventInit>((sink) => {
      const chain = { bytes: Buffer.alloc(1 << 20) };
      held = new WeakRef(chain);
      let sent = 0;
      sink.onRequest(() => {
        while (sink.requested > 0 && sent < 3 && !sink.isCancelled) sink.next({ data: `e${++sent} ${chain.bytes.length}` });
        if (sent === 3) sink.complete();
      });
    });
    const stream = new ReplayStream(flow, { streamId: ID, windowBytes: 1 << 16, lingerMs: 0 });
    const r = read(stream);
    r.sub.request(Infinity);
    expect(await stream.done).toEqual({ kind: 'complete' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    expect(held?.deref()).toBeUndefined();
    // The log is still whole, in one buffer of its own size (no event keeps a shared pool slab alive).
    expect(stream.window.get(1)?.buffer.byteLength).toBe(stream.window.bytes);
    const late = read(stream);
    late.sub.request(Infinity);
    expect(late.got.map((e) => e.split('\n').find((l) => l.startsWith('data:')))).toEqual(['data: e1 1048576', 'data: e2 1048576', 'data: e3 1048576']);
    expect(late.done()).toBe('complete');
  });

  it('numbers events <streamId>:<seq> and requests upstream exactly what one caught-up reader asks', () => {
    const s = source();
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 10_000, lingerMs: 1000 });
    const r = read(stream);
    r.sub.request(3);
    expect(s.requested()).toBe(3);
    expect(r.got[0]).toBe(`id: ${ID}:1\ndata: ${'e1'.padEnd(100, '.')}\n\n`);
    r.sub.request(2);
    expect(s.requested()).toBe(5);
    expect(r.got).toHaveLength(5);
    r.sub.cancel();
  });

  it('lets the slowest attached reader bound the producer to windowBytes ahead, and a detached one not', () => {
    const s = source();
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 1200, lingerMs: 1000 });
    const slow = read(stream);
    const fast = read(stream);
    fast.sub.request(100);
    // Each event is ~145 bytes on the wire: the producer stops once the slow reader has 1200 unread.
    expect(s.emitted()).toBeGreaterThanOrEqual(8);
    expect(s.emitted()).toBeLessThanOrEqual(10);
    const bounded = s.emitted();
    slow.sub.request(5);
    expect(s.emitted()).toBe(bounded + 5);
    slow.sub.cancel();
    // Detached, the slow reader no longer holds the fast one back.
    expect(s.emitted()).toBe(100);
    expect(fast.got).toHaveLength(100);
    fast.sub.cancel();
  });

  it('replays the window to a late reader and refuses one from before it with ResumeGapError', () => {
    const s = source(20);
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 1024, lingerMs: 1000 });
    const r = read(stream);
    r.sub.request(Infinity);
    expect(r.done()).toBe('complete');
    expect(() => stream.reader(0)).toThrow(ResumeGapError);
    const late = read(stream, 17);
    late.sub.request(10);
    expect(late.got.map((b) => b.split('\n')[0])).toEqual([`id: ${ID}:18`, `id: ${ID}:19`, `id: ${ID}:20`]);
    expect(late.done()).toBe('complete');
  });

  it('reads ahead one event at a time while detached, up to windowBytes, then cancels after lingerMs', async () => {
    const s = source();
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 1000, lingerMs: 50 });
    const r = read(stream);
    r.sub.request(2);
    r.sub.cancel();
    expect(stream.detached).toBe(true);
    expect(s.emitted()).toBeGreaterThanOrEqual(2 + 6);
    expect(s.emitted()).toBeLessThanOrEqual(2 + 8);
    expect(s.cancelled()).toBe(false);
    expect(await stream.done).toEqual({ kind: 'cancelled' });
    expect(s.cancelled()).toBe(true);
  });

  it('keeps the upstream when a reader comes back within lingerMs', async () => {
    const s = source(30);
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 100_000, lingerMs: 100 });
    const r = read(stream);
    r.sub.request(2);
    r.sub.cancel();
    await new Promise((ok) => setTimeout(ok, 30));
    const back = read(stream, 2);
    await new Promise((ok) => setTimeout(ok, 150));
    back.sub.request(Infinity);
    expect(back.got).toHaveLength(28);
    expect(back.done()).toBe('complete');
    expect(s.cancelled()).toBe(false);
  });

  it('counts a reader on another instance as attached: reads up to windowBytes ahead of it and does not linger', async () => {
    const s = source();
    const stream = new ReplayStream(s.flow, { streamId: ID, windowBytes: 1000, lingerMs: 30 });
    const r = read(stream);
    r.sub.request(2);
    r.sub.cancel();
    stream.follow(2);
    const ahead = s.emitted();
    expect(ahead).toBeLessThanOrEqual(2 + 8);
    stream.follow(6);
    expect(s.emitted()).toBeGreaterThan(ahead);
    await new Promise((ok) => setTimeout(ok, 80));
    expect(s.cancelled()).toBe(false);
    stream.follow(undefined);
    expect(await stream.done).toEqual({ kind: 'cancelled' });
  });
});
