import { fromIterable } from '../../../src/flow/sources/iterable';
import { fromAsyncIterable } from '../../../src/flow/sources/readable-stream';
import type { Subscription } from '../../../src/flow/types';
import { createLogger } from '../../../src/gateway/logger';
import { RedisResumeStore } from '../../../src/gateway/resume/redis-store';
import type { ReplayStream } from '../../../src/gateway/resume/replay-stream';
import { DEFAULT_RESUME } from '../../../src/gateway/resume/settings';
import type { SseEventInit } from '../../../src/sse';
import { redisAvailable, startRedis, type RedisProcess } from '../../harness/redis';
import { until } from './helpers';

// Several readers of one stream on instances that do not produce it, on a real redis-server:
// the slowest of them bounds how far the producer reads ahead (windowBytes), not the last to report.

/** A client that reads the stream's first event and leaves (the stream is then detached). */
function readOneAndLeave(stream: ReplayStream): Promise<void> {
  return new Promise<void>((resolve) => {
    let sub!: Subscription;
    stream.reader(0).subscribeWith({
      onSubscribe: (s) => {
        sub = s;
        s.request(1);
      },
      onNext: () => {
        sub.cancel();
        resolve();
      },
      onError: () => resolve(),
      onComplete: () => resolve(),
    });
  });
}

const run = redisAvailable() ? describe : describe.skip;

const EVENTS = 800;
const WINDOW = 4096;

/** A follower on another instance: the events it got, and its subscription to ask for more. */
interface Follower {
  seqs: number[];
  subscription: Subscription;
  ended: Promise<unknown>;
}

run('RedisResumeStore: several followers on other instances', () => {
  let redis: RedisProcess;
  const stores: RedisResumeStore[] = [];
  const store = (): RedisResumeStore => {
    const s = new RedisResumeStore({ url: redis.url, keyPrefix: 'tidegate:', leaseMs: 2000, maxMemoryBytes: 1 << 24, logger: createLogger({ silent: true }) });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    redis = await startRedis();
  }, 20_000);
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await redis?.stop();
  });

  async function follow(on: RedisResumeStore, streamId: string, request: number): Promise<Follower> {
    // The producer writes the stream's meta to Redis on its own connection: wait until it landed.
    let stored = await on.find(streamId);
    for (const deadline = Date.now() + 5000; stored === undefined && Date.now() < deadline; stored = await on.find(streamId)) await new Promise((r) => setTimeout(r, 20));
    if (stored === undefined) throw new Error('stream not found');
    const flow = await stored.reader(0);
    const seqs: number[] = [];
    let subscription!: Subscription;
    const ended = new Promise((resolve) =>
      flow.subscribeWith({
        onSubscribe: (s) => {
          subscription = s;
          s.request(request);
        },
        onNext: (bytes) => seqs.push(Number(/^id: [0-9a-f]{32}:(\d+)$/m.exec(bytes.toString())?.[1])),
        onError: (error) => resolve({ error }),
        onComplete: () => resolve('complete'),
      }),
    );
    return { seqs, subscription, ended };
  }

  it('reads ahead of the slowest follower by at most windowBytes while a faster one waits, then serves both without a gap', async () => {
    const producerStore = store();
    const streamId = 'a1'.repeat(16);
    const events = fromIterable<SseEventInit>(Array.from({ length: EVENTS }, (_, i) => ({ data: `event ${i}`.padEnd(80, '.') })));
    const stream = producerStore.open(events, { streamId, routePath: '/r', credentialHash: '', settings: { ...DEFAULT_RESUME, store: 'redis', windowBytes: WINDOW, lingerMs: 5000 } });
    // The first client reads one event and leaves: the stream is detached, read ahead within the window.
    await readOneAndLeave(stream);
    await until(() => stream.window.lastSeq > 1, 5000, 'read-ahead');
    const eventBytes = stream.window.bytesAfter(stream.window.lastSeq - 1);

    const [b, c] = [store(), store()];
    const slow = await follow(b, streamId, 5);
    const fast = await follow(c, streamId, Infinity);
    await until(() => slow.seqs.length === 5, 5000, 'the slow follower’s 5 events');
    // Long enough for many position reports of the fast follower and polls of the producer.
    await new Promise((r) => setTimeout(r, 1500));
    expect(stream.window.bytesAfter(5)).toBeLessThanOrEqual(WINDOW + eventBytes);
    expect(stream.window.lastSeq).toBeLessThan(EVENTS / 4);
    expect(fast.seqs.length).toBeGreaterThan(5);
    expect(fast.seqs.length).toBeLessThanOrEqual(stream.window.lastSeq);

    slow.subscription.request(Infinity);
    expect(await slow.ended).toBe('complete');
    expect(await fast.ended).toBe('complete');
    expect(slow.seqs).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));
    expect(fast.seqs).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));
  }, 30_000);
  it('gets every event and the end when the stream sends only keep-alives for longer than windowBytes of them', async () => {
    const producerStore = store();
    const streamId = 'b2'.repeat(16);
    const ping = { event: 'ping', data: 'p'.repeat(200) };
    async function* upstream(): AsyncGenerator<SseEventInit> {
      yield { data: 'first' };
      // About six windows of keep-alives, spread over more than one poll of the followers.
      for (let i = 0; i < 30; i++) {
        await new Promise((r) => setTimeout(r, 10));
        yield ping;
      }
      for (let i = 2; i <= 6; i++) yield { data: `event ${i}` };
    }
    const settings = { ...DEFAULT_RESUME, store: 'redis' as const, windowBytes: 1024, lingerMs: 5000 };
    const stream = producerStore.open(fromAsyncIterable(upstream()), { streamId, routePath: '/r', credentialHash: '', settings }, { isKeepAlive: (e) => e.event === 'ping' });
    // The first client reads the first event and leaves; a follower on another instance takes over.
    await readOneAndLeave(stream);
    const follower = await follow(store(), streamId, Infinity);
    const outcome = await Promise.race([follower.ended, new Promise((r) => setTimeout(() => r('stalled'), 8000).unref())]);
    expect(outcome).toBe('complete');
    expect(follower.seqs).toEqual([1, 2, 3, 4, 5, 6]);
  }, 30_000);
});
