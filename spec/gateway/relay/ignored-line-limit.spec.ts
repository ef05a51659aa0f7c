import http from 'node:http';
import zlib from 'node:zlib';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport } from '../helpers';

// An upstream line the SSE rules ignore (a comment, an unknown field, a name without a colon)
// still counts against the event cap: an endless one ends the stream with ERR_TIDEGATE_SSE_LIMIT
// on either relay, plain or gzip, instead of being read until timeouts.idleMs.

const MAX_EVENT_BYTES = 64 * 1024;
const IDLE_MS = 20_000;

/** Writes `x` without a line end, 16 KiB every 2 ms, until the socket closes. */
function endlessLine(res: http.ServerResponse, gzip: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
  const out: NodeJS.WritableStream = gzip ? zlib.createGzip() : res;
  if (gzip) (out as zlib.Gzip).pipe(res);
  const chunk = Buffer.alloc(16 * 1024, 'x');
  const timer = setInterval(() => out.write(chunk), 2);
  res.on('close', () => clearInterval(timer));
}

function pings(res: http.ServerResponse, gzip: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
  const text = ': ping\n\n'.repeat(200) + 'data: hello\n\n' + ': ping\n\n'.repeat(200) + 'data: [DONE]\n\n';
  res.end(gzip ? zlib.gzipSync(text) : text);
}

describe('an ignored upstream line counts against the event cap', () => {
  let gw: RunningGateway;
  let upstream: Awaited<ReturnType<typeof listen>>;
  const logs = new CaptureTransport();

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      const gzip = req.url?.includes('gzip') ?? false;
      if (req.url?.startsWith('/endless')) endlessLine(res, gzip);
      else pings(res, gzip);
    });
    const routes = [];
    for (const relay of ['bytes', 'events'] as const) {
      for (const kind of ['endless', 'endless-gzip', 'pings', 'pings-gzip']) {
        routes.push({ path: `/${relay}/${kind}`, provider: 'passthrough', url: `${upstream.url}/${kind}`, terminator: { data: '[DONE]' }, policy: { relay, maxEventBytes: MAX_EVENT_BYTES }, timeouts: { idleMs: IDLE_MS } });
      }
    }
    const config = parseConfig({ port: 0, upstream: { url: 'http://127.0.0.1:1' }, routes });
    gw = await startGateway(config, { logger: createLogger({ transports: [logs] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  for (const relay of ['bytes', 'events']) {
    for (const kind of ['endless', 'endless-gzip']) {
      it(`${relay} relay, ${kind === 'endless' ? 'plain' : 'gzip'} upstream: an endless line without a colon ends the stream with ERR_TIDEGATE_SSE_LIMIT`, async () => {
        const started = performance.now();
        const res = await fetch(`${gw.url}/${relay}/${kind}`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toMatch(/event: error\ndata: .*ERR_TIDEGATE_SSE_LIMIT/);
        expect(performance.now() - started).toBeLessThan(5000);
      });
    }

    for (const kind of ['pings', 'pings-gzip']) {
      it(`${relay} relay, ${kind === 'pings' ? 'plain' : 'gzip'} upstream: comment keep-alives of a normal size pass`, async () => {
        const res = await fetch(`${gw.url}/${relay}/${kind}`, { signal: AbortSignal.timeout(10_000) });
        const text = await res.text();
        expect(text).toContain('data: hello\n\n');
        expect(text).toContain('data: [DONE]\n\n');
        expect(text).not.toContain('ERR_TIDEGATE');
      });
    }
  }
});
