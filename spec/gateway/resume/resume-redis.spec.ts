import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSimulator, type Simulator } from '../../../src/simulator';
import { startGatewayProcess, type GatewayProcess } from '../../harness/gateway-process';
import { redisAvailable, startRedis, type RedisProcess } from '../../harness/redis';
import { SIM_HEADERS } from '../helpers';
import { chat, chatText, readSse, seqs } from './helpers';

// The Redis store across two gateway processes (dist/gateway/cli.js) and a real redis-server:
// a stream started on one resumes on the other, and a follower of a producer that died learns it.

const run = redisAvailable() ? describe : describe.skip;

run('resume (redis store, two gateway processes)', () => {
  let redis: RedisProcess;
  let sim: Simulator;
  let dir: string;
  let a: GatewayProcess;
  let b: GatewayProcess;

  beforeAll(async () => {
    redis = await startRedis();
    sim = createSimulator({ tokensPerSecond: 200, ttftMs: 1 });
    const { url } = await sim.listen(0, '127.0.0.1');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-resume-'));
    const forwardHeaders = ['content-type', ...SIM_HEADERS];
    fs.writeFileSync(
      path.join(dir, 'gateway.json'),
      JSON.stringify({
        upstream: { url },
        stream: { heartbeatMs: 0 },
        retry: { maxAttempts: 1 },
        redis: { url: redis.url, leaseMs: 600 },
        routes: [
          { path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { store: 'redis', lingerMs: 5000 } },
          { path: '/small/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { store: 'redis', windowBytes: 2048 } },
          { path: '/direct/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders },
        ],
      }),
    );
    a = await startGatewayProcess(['--config', path.join(dir, 'gateway.json')], 30_000);
    b = await startGatewayProcess(['--config', path.join(dir, 'gateway.json')], 30_000);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await sim?.close();
    await redis?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resumes on the other instance after a drop: replayed from Redis, then live, no duplicate, no gap', async () => {
    const direct = await readSse(`${a.url}/direct/v1/chat/completions`, { body: chat('sim-long') });
    await direct.ended;
    const first = await readSse(`${a.url}/v1/chat/completions`, { body: chat('sim-long') });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(6);
    first.drop();
    await first.ended;
    const had = [...first.events];
    const rest = await readSse(`${b.url}/v1/streams/${streamId}`, { headers: { 'last-event-id': had[had.length - 1]!.lastEventId } });
    expect(rest.status).toBe(200);
    await rest.ended;
    const all = [...had, ...rest.events];
    expect(seqs(all, streamId)).toEqual(all.map((_, i) => i + 1));
    expect(rest.events[rest.events.length - 1]!.data).toBe('[DONE]');
    expect(chatText(all)).toBe(chatText(direct.events));
  }, 30_000);

  it('refuses on the other instance a resume from before the window (410), an unknown stream (404), another credential (403)', async () => {
    const unknown = await readSse(`${b.url}/v1/streams/${'f'.repeat(32)}`);
    await unknown.ended;
    expect(unknown.status).toBe(404);
    const long = await readSse(`${a.url}/small/v1/chat/completions`, { body: chat('sim-long'), headers: { 'x-sim-tokens-per-second': 'Infinity' } });
    const longId = String(long.headers['x-tidegate-stream-id']);
    await long.ended;
    const gap = await readSse(`${b.url}/v1/streams/${longId}`, { headers: { 'last-event-id': `${longId}:1` } });
    await gap.ended;
    expect(gap.status).toBe(410);
    expect(JSON.parse(gap.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_RESUME_GAP' } });
    const n = long.events.length;
    const tail = await readSse(`${b.url}/v1/streams/${longId}`, { headers: { 'last-event-id': `${longId}:${n - 2}` } });
    await tail.ended;
    expect(tail.events.map((e) => e.data)).toEqual(long.events.slice(n - 2).map((e) => e.data));
    const done = await readSse(`${a.url}/v1/chat/completions`, { body: chat(), headers: { authorization: 'Bearer alice' } });
    const streamId = String(done.headers['x-tidegate-stream-id']);
    await done.ended;
    const other = await readSse(`${b.url}/v1/streams/${streamId}?after=2`, { headers: { authorization: 'Bearer mallory' } });
    await other.ended;
    expect(other.status).toBe(403);
    const replay = await readSse(`${b.url}/v1/streams/${streamId}?after=2`, { headers: { authorization: 'Bearer alice' } });
    await replay.ended;
    expect(replay.events.map((e) => e.data)).toEqual(done.events.slice(2).map((e) => e.data));
  }, 30_000);

  it('gives a follower on the other instance ERR_TIDEGATE_UPSTREAM_LOST when the producing process dies', async () => {
    const first = await readSse(`${a.url}/v1/chat/completions`, { body: chat('sim-long'), headers: { 'x-sim-tokens-per-second': '20' } });
    const streamId = String(first.headers['x-tidegate-stream-id']);
    await first.atLeast(3);
    first.drop();
    const follower = await readSse(`${b.url}/v1/streams/${streamId}?after=0`);
    expect(follower.status).toBe(200);
    await follower.atLeast(first.events.length + 2);
    await a.stop(); // SIGKILL: no end is written, the lease runs out
    await follower.ended;
    const last = follower.events[follower.events.length - 1]!;
    expect(JSON.parse(last.data)).toMatchObject({ error: { code: 'ERR_TIDEGATE_UPSTREAM_LOST' } });
    expect(seqs(follower.events.slice(0, -1), streamId)).toEqual(follower.events.slice(0, -1).map((_, i) => i + 1));
  }, 30_000);
});
