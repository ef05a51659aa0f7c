import http from 'node:http';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport, parsePrometheus } from '../helpers';

// resumeStore.maxMemoryBytes bounds every log of the memory store together, over real sockets:
// clients that read a little and leave detach their streams, whose read-ahead then pauses their
// upstreams at the cap instead of growing past it.

const MAX_MEMORY_BYTES = 96 * 1024;
const WINDOW_BYTES = 32 * 1024;

/** An endless feed of ~1 KiB events, written as fast as the gateway reads them. */
function feed(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let n = 0;
  const pump = (): void => {
    while (!res.destroyed && res.write(`data: ${String(++n).padEnd(1000, '.')}\n\n`));
  };
  res.on('drain', pump);
  pump();
}

async function logBytes(gw: RunningGateway): Promise<number> {
  const metrics = parsePrometheus(await (await fetch(`${gw.url}/metrics`)).text());
  return metrics.get('tidegate_resume_log_bytes') ?? NaN;
}

/** Opens the feed, reads its first bytes, and leaves; resolves with the stream id. */
async function readALittleAndLeave(gw: RunningGateway): Promise<string> {
  const controller = new AbortController();
  const res = await fetch(`${gw.url}/feed`, { signal: controller.signal });
  const id = String(res.headers.get('x-tidegate-stream-id'));
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  controller.abort();
  await reader.cancel().catch(() => undefined);
  return id;
}

describe('resumeStore.maxMemoryBytes with detached streams', () => {
  let gw: RunningGateway;
  let upstream: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    upstream = await listen((_req: http.IncomingMessage, res: http.ServerResponse) => feed(res));
    const config = parseConfig({
      port: 0,
      upstream: { url: 'http://127.0.0.1:1' },
      resumeStore: { maxMemoryBytes: MAX_MEMORY_BYTES },
      limits: { maxStreamsPerClient: 0 },
      routes: [{ path: '/feed', provider: 'passthrough', url: `${upstream.url}/feed`, resume: { windowBytes: WINDOW_BYTES, lingerMs: 10_000 } }],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('keeps the logs of 24 detached streams under the cap, and a resumer gets its events in order or a typed error', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push(await readALittleAndLeave(gw));
    // Unbounded, each would read 32 KiB ahead: about 800 KiB in all.
    let highest = 0;
    for (let i = 0; i < 20; i++) {
      highest = Math.max(highest, await logBytes(gw));
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(highest).toBeGreaterThan(0);
    expect(highest).toBeLessThanOrEqual(MAX_MEMORY_BYTES);

    for (const id of [ids[0], ids[23]]) {
      const controller = new AbortController();
      const res = await fetch(`${gw.url}/v1/streams/${id}?after=0`, { signal: controller.signal });
      if (res.status !== 200) {
        expect(res.status).toBe(410);
        expect(await res.json()).toMatchObject({ error: { code: 'ERR_TIDEGATE_RESUME_GAP' } });
        continue;
      }
      // 60 events, numbered on from 1 without a gap, then leave.
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let text = '';
      while ((text.match(/\n\n/g) ?? []).length < 60) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      controller.abort();
      const seqs = [...text.matchAll(new RegExp(`^id: ${id}:(\\d+)$`, 'gm'))].map((m) => Number(m[1]));
      if (text.includes('event: error')) expect(text).toMatch(/ERR_TIDEGATE_RESUME_STORE_FULL/);
      else expect(seqs.slice(0, 60)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(await logBytes(gw)).toBeLessThanOrEqual(MAX_MEMORY_BYTES);
    }
  });
});
