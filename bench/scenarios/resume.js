'use strict';
// RESUME: clients drop mid-stream and resume. Each of `streams` clients POSTs a stream to the
// OpenAI route (resume on, the fake upstream numbering its events), drops its connection after a
// random number of events, and once all have dropped (all are detached then) resumes with
// `GET /v1/streams/{id}` and `Last-Event-ID`, every other one on a second gateway instance when
// the build has the Redis store and `redis-server` is installed. Measures events lost and
// duplicated, reconnect → first replayed event, and the gateway's RSS per detached stream.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { execFileSync } = require('node:child_process');
const procs = require('../lib/procs');
const { buildServes } = require('../targets');
const { table, percentile, sum } = require('../lib/harness');

function redisServer() {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server']).toString().trim() || null;
  } catch {
    return null;
  }
}

/** Why the resume scenario cannot run with this build, or null. */
function unavailable(t) {
  if (!t) return 'no tidegate OpenAI target';
  if (!t.available().ok) return t.available().why;
  if (!buildServes(t.cli, '/v1/streams/:streamId')) return 'this gateway build has no GET /v1/streams/{id} (resumable streams)';
  return null;
}

async function startRedis(bin) {
  const port = await procs.freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bench-redis-'));
  const rec = procs.start('redis', bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {});
  await procs.waitForPort(port, 10000, rec);
  return { rec, url: `redis://127.0.0.1:${port}`, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Redis's `used_memory` (bytes), from `INFO memory` over a raw connection; null on failure. */
function redisUsedMemory(url) {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port: Number(port) });
    let text = '';
    const done = (v) => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(2000, () => done(null));
    sock.on('error', () => done(null));
    sock.on('connect', () => sock.write('INFO memory\r\n'));
    sock.on('data', (d) => {
      text += d.toString('latin1');
      const m = /used_memory:(\d+)/.exec(text);
      if (m) done(Number(m[1]));
    });
  });
}

async function run(hn) {
  const { P, results } = hn;
  const p = P.resume;
  const base = hn.allTargets.find((t) => t.name === 'tidegate-openai');
  const why = unavailable(base);
  if (why) {
    results.skipped.push({ target: 'RESUME', why });
    results.scenarios.RESUME = { skipped: why };
    return;
  }
  const redisBin = redisServer();
  const redisStore = Boolean(redisBin) && hasRedisStore(base.cli);
  let redis = null;
  const handles = [];
  const rows = {};
  const name = redisStore ? 'tidegate-openai (redis, 2 instances)' : 'tidegate-openai (memory, 1 instance)';
  try {
    if (redisStore) redis = await startRedis(redisBin);
    const config = {
      routes: [{ path: '/v1/chat/completions', provider: 'openai', resume: { store: redisStore ? 'redis' : 'memory', windowBytes: p.windowBytes, lingerMs: p.lingerMs } }],
      ...(redis ? { redis: { url: redis.url } } : {}),
    };
    const target = { ...base, name, start: (ctx) => base.start({ ...ctx, config }) };
    // The upstream numbers every event, so the client can tell a lost or repeated one.
    await hn.upCtl('/_config', { rate: p.rate, eventBytes: p.eventBytes, durationMs: p.durationMs, maxBytes: 1 << 30, ts: false, tickMs: 10, seq: true });
    handles.push(await hn.startTarget(target));
    if (redis) handles.push(await hn.startTarget(target));
    // Each client drops after a seeded random number of events, within the first 80% of its stream.
    const rnd = mulberry32(42);
    const events = Math.floor((p.rate * p.durationMs) / 1000);
    const dropAfterEvents = Array.from({ length: p.streams }, () => 1 + Math.floor(rnd() * Math.max(1, 0.8 * events - 1)));
    const spec = { ports: handles.map((h) => h.port), path: '/v1/chat/completions', streams: p.streams, dropAfterEvents, awayMs: p.awayMs, maxMs: p.maxMs, tagPrefix: 'rs-', sampleMs: 300 };
    let detachedRssMb = null;
    let redisDetached = null;
    const redisIdle = redis ? await redisUsedMemory(redis.url) : null;
    const onDetached = (m) => {
      if (m.type !== 'detached') return;
      detachedRssMb = sum(handles.map((h) => h.sampler.read().rssMb));
      if (redis) redisUsedMemory(redis.url).then((v) => (redisDetached = v));
    };
    hn.load.child.on('message', onDetached);
    let res;
    try {
      res = await hn.loadCall({ cmd: 'resume', spec }, 'resumed', p.maxMs + 30000);
    } finally {
      hn.load.child.off('message', onDetached);
    }
    const stats = await hn.upCtl('/_stats');
    const produced = new Map(stats.streams.map((s) => [s.tag, s.events]));
    let lost = 0;
    let duplicated = 0;
    for (const c of res.clients) {
      const n = produced.get(c.tag) || 0;
      lost += Math.max(0, n - c.unique); // every event the upstream wrote must arrive, once
      duplicated += c.received - c.unique;
    }
    const replay = res.clients.map((c) => c.replayMs).filter((v) => typeof v === 'number').sort((x, y) => x - y);
    const idle = sum(handles.map((h) => h.idle.rssMb));
    const dropped = res.clients.filter((c) => c.dropped).length;
    rows[name] = {
      streams: p.streams,
      dropped,
      resumed: res.clients.filter((c) => c.resumed && c.resumeStatus === 200).length,
      otherInstance: redis ? res.clients.filter((c) => c.resumed && c.resumePort === handles[1].port && c.resumeStatus === 200).length : 0,
      completed: res.clients.filter((c) => c.done).length,
      refused: res.clients.filter((c) => c.resumeStatus && c.resumeStatus !== 200).length,
      errors: res.clients.filter((c) => c.error).slice(0, 5).map((c) => c.error),
      lost,
      duplicated,
      replayMs: { n: replay.length, p50: percentile(replay, 0.5), p99: percentile(replay, 0.99), max: replay.length ? replay[replay.length - 1] : null },
      detachedRssMb,
      idleRssMb: idle,
      kbPerDetached: detachedRssMb !== null && dropped > 0 ? ((detachedRssMb - idle) * 1024) / dropped : null,
      windowBytes: p.windowBytes,
      redisKbPerStream: redisIdle !== null && redisDetached !== null && dropped > 0 ? (redisDetached - redisIdle) / 1024 / dropped : null,
      store: redisStore ? 'redis' : 'memory',
      instances: handles.length,
    };
  } catch (e) {
    rows[name] = { error: String(e && e.message ? e.message : e).slice(0, 500) };
  } finally {
    for (const h of handles) await hn.stopTarget(h);
    if (redis) {
      await procs.stop(redis.rec);
      redis.cleanup();
    }
  }
  results.scenarios.RESUME = rows;
  table(
    `RESUME: ${p.streams} streams drop at random and resume`,
    ['target', 'dropped', 'resumed', 'other instance', 'completed', 'lost', 'duplicated', 'replay p99 ms', 'KB/detached stream'],
    Object.entries(rows).map(([n, r]) => (r.error ? [n, 'ERROR: ' + r.error.slice(0, 60)] : [n, r.dropped, r.resumed, r.otherInstance, r.completed, r.lost, r.duplicated, r.replayMs.p99?.toFixed(1), r.kbPerDetached?.toFixed(1) ?? 'n/a'])),
  );
}

/** Whether a build has a Redis store for resumable streams (a compiled module named after it). */
function hasRedisStore(cli) {
  try {
    return fs.readdirSync(path.join(path.dirname(cli), 'resume')).some((f) => /redis/.test(f) && f.endsWith('.js'));
  } catch {
    return false;
  }
}

/** A small seeded PRNG, so every run drops at the same moments. */
function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

module.exports = { key: 'RESUME', run };
