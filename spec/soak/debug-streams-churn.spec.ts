import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import type { StreamSnapshot } from '../../src/gateway/metrics';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { CaptureTransport } from '../gateway/helpers';
import { listen, RawClient, sleep, waitFor } from '../harness/net';
import { post, rng, scriptedUpstream, type ScriptedUpstream, type Step } from '../harness/relay-harness';

// GET /debug/streams polled in a tight loop while streams start, fail before
// their headers (upstream 500, refused connection), retry, end, get cut by the stall timeout,
// reconnect on a resumable route, and while the gateway shuts down. It must never fail, never list
// an ended stream for long, and its numbers must hold together.

interface Body {
  activeStreams: number;
  streams: StreamSnapshot[];
}

/** Polls `url` back to back until stopped; records every status and every invariant broken. */
function poller(url: string): { stop(): Promise<void>; polls: number; failures: string[]; seenIds: Set<string>; maxStreams: number; ended: Map<string, number> } {
  /** Stream id → when its client saw the response end (performance.now()). */
  const ended = new Map<string, number>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const state = { stopped: false, polls: 0, failures: [] as string[], seenIds: new Set<string>(), maxStreams: 0 };
  const check = (b: Body, sentAt: number): void => {
    if (b.streams.length > b.activeStreams) state.failures.push(`listed ${b.streams.length} > activeStreams ${b.activeStreams}`);
    state.maxStreams = Math.max(state.maxStreams, b.streams.length);
    for (const s of b.streams) {
      state.seenIds.add(s.streamId);
      const endedAt = ended.get(s.streamId);
      if (endedAt !== undefined && sentAt - endedAt > 200) state.failures.push(`${s.route} ${s.streamId} listed ${Math.round(sentAt - endedAt)} ms after its client saw the end`);
      const br = s.bridge;
      if (typeof s.ageMs !== 'number' || s.ageMs < 0) state.failures.push(`ageMs ${String(s.ageMs)}`);
      if (br !== undefined) {
        for (const k of ['outstanding', 'heldElements', 'heldBytes', 'batchBytes', 'writableLength', 'budgetUsed', 'events', 'bytes', 'idleMs'] as const) {
          if (typeof br[k] !== 'number' || br[k] < 0) state.failures.push(`${s.route} bridge.${k} = ${String(br[k])}`);
        }
        if (br.budgetUsed > br.budgetMax) state.failures.push(`${s.route} budgetUsed ${br.budgetUsed} > budgetMax ${br.budgetMax}`);
        if (br.heldElements === 0 && br.heldBytes !== 0) state.failures.push(`${s.route} heldBytes ${br.heldBytes} without held elements`);
      }
      if (s.upstream !== undefined && (typeof s.upstream.bufferedBytes !== 'number' || s.upstream.bufferedBytes < 0)) state.failures.push(`${s.route} upstream.bufferedBytes ${String(s.upstream.bufferedBytes)}`);
      if (s.heldReadDemand !== undefined && s.heldReadDemand < 0) state.failures.push(`${s.route} heldReadDemand ${s.heldReadDemand}`);
    }
  };
  const loop = (async () => {
    const deadline = Date.now() + 30_000;
    while (!state.stopped && Date.now() < deadline) {
      state.polls++;
      const sentAt = performance.now();
      try {
        const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
          http
            .get(url, { agent }, (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => (text += c));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
              res.on('error', reject);
            })
            .on('error', reject);
        });
        if (body.status !== 200) state.failures.push(`status ${body.status}: ${body.text.slice(0, 200)}`);
        else check(JSON.parse(body.text) as Body, sentAt);
      } catch (err) {
        state.failures.push(`request failed: ${String(err)}`);
        await sleep(5);
      }
    }
  })();
  return {
    async stop() {
      state.stopped = true;
      await loop;
      agent.destroy();
    },
    get polls() {
      return state.polls;
    },
    failures: state.failures,
    ended,
    seenIds: state.seenIds,
    get maxStreams() {
      return state.maxStreams;
    },
  };
}

const BIG_EVENT = `data: ${'b'.repeat(4000)}\n\n`;
/** Near the 32 KiB budget: 20 000 bytes. */
const BIGGER_EVENT = `data: ${'g'.repeat(19_992)}\n\n`;
const events = (n: number, tag: string): Step[] => Array.from({ length: n }, (_, i) => [`id: ${i}\ndata: ${tag}-${i}\n\n`, 3]).flat() as Step[];

describe('GET /debug/streams under churn', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let pollServer: Awaited<ReturnType<typeof listen>>;
  const clients: RawClient[] = [];
  let refusedUrl: string;
  let flaky = 0;

  beforeAll(async () => {
    up = await scriptedUpstream();
    const closed = await listen((_q, r) => r.end());
    refusedUrl = closed.url;
    await closed.close();
    up.scripts.set('ok', () => events(15, 'ok'));
    up.scripts.set('big', () => Array.from({ length: 10_000 }, () => BIG_EVENT));
    up.scripts.set('bigger', () => Array.from({ length: 2_000 }, () => BIGGER_EVENT));
    // The same, paced (a 10 ms pause every 20 events): with the kernel's unsent queue bounded, a
    // non-reading client's budget fills within milliseconds of a burst; paced, its stream lives
    // long enough for the snapshots to see it fill.
    const paced = (event: string, length: number) => (): Step[] => Array.from({ length }, (_, i): Step[] => (i % 20 === 19 ? [event, 10] : [event])).flat();
    up.scripts.set('big-paced', paced(BIG_EVENT, 10_000));
    up.scripts.set('bigger-paced', paced(BIGGER_EVENT, 2_000));
    up.scripts.set('500', (_q, res) => void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"boom"}}'));
    up.scripts.set('flaky', (_q, res) => {
      if (flaky++ % 2 === 0) return void res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end('{"error":{"message":"busy"}}');
      return events(5, 'flaky');
    });
    up.scripts.set('reset', () => [...events(5, 'reset'), { reset: true }]);
    up.scripts.set('oa', () => [...events(5, 'oa').map((s) => (typeof s === 'string' ? s.replace(/data: (.*)/, 'data: {"choices":[{"index":0,"delta":{"content":"$1"}}]}') : s)), 'data: [DONE]\n\n']);
    const resumable = new Map<string, number>();
    up.scripts.set('res', (req) => {
      const key = String(req.headers['x-key']);
      const n = resumable.get(key) ?? 0;
      resumable.set(key, n + 1);
      return n === 0 ? [...events(4, 'res'), { reset: true }] : ['data: more\n\n', 5, 'data: bye\n\n'];
    });
    const forwardHeaders = ['x-script', 'x-key'];
    const policy = { maxBufferedBytes: 32 * 1024, stallTimeoutMs: 400 };
    const config = parseConfig({
      port: 0,
      upstream: { url: up.url },
      retry: { maxAttempts: 1 },
      stream: { heartbeatMs: 0 },
      debug: { streams: true },
      shutdown: { graceMs: 300 },
      routes: [
        { path: '/pt', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy },
        { path: '/pt-ev', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy: { ...policy, relay: 'events' } },
        { path: '/retry', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } },
        { path: '/refused', provider: 'passthrough', url: `${refusedUrl}/x`, forwardHeaders, policy },
        { path: '/res', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy, resumable: true, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 }, terminator: { data: 'bye' } },
        { path: '/oa', provider: 'openai', url: `${up.url}/u`, forwardHeaders, policy },
        { path: '/term', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy: { ...policy, overflow: 'terminate' } },
        { path: '/term-ev', provider: 'passthrough', url: `${up.url}/u`, forwardHeaders, policy: { ...policy, overflow: 'terminate', relay: 'events' } },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
    // A second server on the same app: the poller keeps going while the gateway's own server closes.
    pollServer = await listen(gw.app as unknown as http.RequestListener);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  afterAll(async () => {
    await gw?.close();
    await pollServer?.close();
    await up?.close();
  });

  it('answers 200 with consistent numbers through starts, failures before headers, retries, ends, resets and stall cuts; then lists nothing', async () => {
    const poll = poller(`${pollServer.url}/debug/streams`);
    const rand = rng(91);
    const kinds = ['ok', 'ok-ev', '500', 'refused', 'retry', 'reset', 'res', 'oa', 'stall'];
    const jobs: Promise<unknown>[] = [];
    let stalls = 0;
    for (let i = 0; i < 60; i++) {
      const kind = kinds[Math.floor(rand() * kinds.length)] as string;
      if (i % 6 === 0) await sleep(10);
      if (kind === 'stall') {
        const eventRelay = stalls % 2 === 1;
        const c = await RawClient.request(gw.port, eventRelay ? '/pt-ev' : '/pt', { headers: { 'x-script': stalls % 3 === 0 ? 'big' : 'bigger' } });
        clients.push(c);
        c.readSome(1000);
        // The event relay (count demand, prefetch × 4-20 KB > 32 KiB) ends these with
        // ERR_TIDEGATE_OVERFLOW behind a full socket: that client reads again after 1 s so its
        // connection ends within the test (spec/express/bridge-linger.spec.ts bounds one that never reads).
        if (eventRelay) setTimeout(() => c.readAll(), 1000);
        stalls++;
        continue;
      }
      const [path, script] =
        kind === 'ok' ? ['/pt', 'ok'] : kind === 'ok-ev' ? ['/pt-ev', 'ok'] : kind === '500' ? ['/pt', '500'] : kind === 'refused' ? ['/refused', 'ok'] : kind === 'retry' ? ['/retry', 'flaky'] : kind === 'reset' ? ['/pt-ev', 'reset'] : kind === 'res' ? ['/res', 'res'] : ['/oa', 'oa'];
      jobs.push(
        post(`${gw.url}${path}`, { 'x-script': script, 'x-key': `k${i}` }, kind === 'oa' ? undefined : 'x').then((r) => {
          const id = r.headers['x-tidegate-stream-id'];
          if (typeof id === 'string') poll.ended.set(id, performance.now());
        }),
      );
    }
    await Promise.all(jobs);
    await waitFor(() => gw.app.gateway.activeStreams === 0, 15_000); // a loaded machine (or --detectOpenHandles) is slow to end 60 streams
    await sleep(50);
    await poll.stop();
    expect(poll.failures.slice(0, 10)).toEqual([]);
    expect(poll.polls).toBeGreaterThan(20);
    expect(stalls).toBeGreaterThan(0);
    // The stall timeout (400 ms) cut each non-reading client: the gateway holds no connection now
    // (a paused raw client cannot see the reset itself, so the count is taken on the gateway's side).
    const connections = (): Promise<number> => new Promise((r) => gw.server.getConnections((_e, n) => r(n)));
    let open = await connections();
    for (let i = 0; i < 60 && open > 0; i++) {
      await sleep(50);
      open = await connections();
    }
    expect(open).toBe(0);
    expect(poll.maxStreams).toBeGreaterThan(0);
    expect(poll.ended.size).toBeGreaterThan(10);
    const after = await (await fetch(`${pollServer.url}/debug/streams`)).json();
    expect(after).toEqual({ activeStreams: 0, streams: [] });
  });

  it('overflow: terminate with a non-reading client (both relays): every snapshot keeps budgetUsed within budgetMax', async () => {
    const poll = poller(`${pollServer.url}/debug/streams`);
    const cs: RawClient[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await RawClient.request(gw.port, i % 2 === 0 ? '/term' : '/term-ev', { headers: { 'x-script': i % 3 === 0 ? 'bigger-paced' : 'big-paced' } });
      clients.push(c);
      cs.push(c);
      c.readSome(i * 5000);
    }
    await waitFor(() => gw.app.gateway.activeStreams === 0, 5000);
    for (const c of cs) c.readAll();
    await sleep(50);
    await poll.stop();
    expect(poll.failures.slice(0, 10)).toEqual([]);
    expect(poll.maxStreams).toBeGreaterThan(0);
  });

  it('resumable routes list no upstream field; event-relay streams no heldReadDemand', async () => {
    up.scripts.set('slow-res', () => [...events(3, 'sr'), 400, 'data: bye\n\n']);
    up.scripts.set('slow', () => [...events(3, 'sl'), 400]);
    const a = post(`${gw.url}/res`, { 'x-script': 'slow-res' }, 'x');
    const b = post(`${gw.url}/pt-ev`, { 'x-script': 'slow' }, 'x');
    let body: Body = { activeStreams: 0, streams: [] };
    for (let i = 0; i < 100 && body.streams.length < 2; i++) {
      await sleep(20);
      body = (await (await fetch(`${pollServer.url}/debug/streams`)).json()) as Body;
    }
    expect(body.streams).toHaveLength(2);
    const res = body.streams.find((s) => s.route === '/res');
    const ev = body.streams.find((s) => s.route === '/pt-ev');
    expect(res?.upstream).toBeUndefined();
    expect(res?.bridge?.finished).toBe(false);
    expect(ev?.heldReadDemand).toBeUndefined();
    expect(ev?.upstream?.ended).toBe(false);
    await Promise.all([a, b]);
  });

  it('keeps answering 200 while the gateway shuts down with streams open, and lists nothing after', async () => {
    const poll = poller(`${pollServer.url}/debug/streams`);
    up.scripts.set('long', () => [...events(3, 'long'), 5000]);
    const open = Array.from({ length: 6 }, (_, i) => post(`${gw.url}/${i % 2 === 0 ? 'pt' : i % 3 === 0 ? 'res' : 'pt-ev'}`, { 'x-script': 'long' }, 'x'));
    await waitFor(() => gw.app.gateway.activeStreams === 6, 3000);
    await sleep(50);
    await gw.shutdown(200);
    await Promise.all(open);
    await sleep(50);
    await poll.stop();
    expect(poll.failures.slice(0, 10)).toEqual([]);
    expect(poll.maxStreams).toBeGreaterThan(0);
    expect(await (await fetch(`${pollServer.url}/debug/streams`)).json()).toEqual({ activeStreams: 0, streams: [] });
  });
});
