import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport, parsePrometheus } from '../helpers';
import { readSse } from '../resume/helpers';

// The event relay over real sockets: an upstream event that never ends is held by the parser,
// counted in the stream's budget, and refused once it would outgrow the budget; a resumable
// passthrough route, which reads its upstream through connectSse, alike.

const BUDGET = 64 * 1024;
const STEP = 8 * 1024;

let upstream: http.Server;
let gw: RunningGateway;
/** Per upstream response: bytes of the unfinished line to send before waiting for `go`. */
let holdAt = 0;
let go: () => void = () => undefined;
let upstreamClosed: Promise<void> = Promise.resolve();

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    upstreamClosed = new Promise((r) => res.once('close', () => r()));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"choices":[{"delta":{"content":"start"}}]}\n\n');
    res.write('data: ');
    let sent = 0;
    const step = (): void => {
      // Stops at 512 KiB, under the default maxEventBytes (1 MiB), over the budget.
      if (res.destroyed || sent >= 512 * 1024) return;
      if (sent >= holdAt && holdAt > 0) {
        holdAt = 0;
        go = step;
        return;
      }
      res.write('L'.repeat(STEP));
      sent += STEP;
      setTimeout(step, 5);
    };
    step();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startGateway(
    parseConfig({
      port: 0,
      upstream: { url },
      stream: { heartbeatMs: 0 },
      retry: { maxAttempts: 1 },
      timeouts: { idleMs: 0 },
      routes: [
        { path: '/v1/chat/completions', provider: 'openai', policy: { relay: 'events', maxBufferedBytes: BUDGET } },
        { path: '/resume/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', resume: { windowBytes: 65536 }, policy: { maxBufferedBytes: BUDGET } },
        { path: '/events', upstreamPath: '/v1/chat/completions', provider: 'passthrough', resumable: true, policy: { maxBufferedBytes: BUDGET } },
      ],
    }),
    { logger: createLogger({ transports: [new CaptureTransport()] }) },
  );
});

afterAll(async () => {
  await gw.close();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function bufferedBytes(): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return parsePrometheus(text).get('tidegate_buffered_bytes') ?? NaN;
}

const body = { model: 'm', stream: true, messages: [] };

describe.each([
  ['relay: events', '/v1/chat/completions'],
  ['a resumable route', '/resume/v1/chat/completions'],
  ['a resumable passthrough route (connectSse)', '/events'],
])('event relay on %s', (_name, path) => {
  it('counts an unfinished event in tidegate_buffered_bytes', async () => {
    holdAt = 40 * 1024;
    const read = await readSse(`${gw.url}${path}`, { body });
    await read.atLeast(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await bufferedBytes()).toBeGreaterThanOrEqual(40 * 1024);
    go();
    await read.ended;
  });

  it('refuses an event that outgrows the budget with ERR_TIDEGATE_SSE_LIMIT and cancels the upstream', async () => {
    holdAt = 0;
    const read = await readSse(`${gw.url}${path}`, { body });
    await Promise.race([read.ended, new Promise((r) => setTimeout(r, 5000).unref())]);
    // The route's protocol (OpenAI, or passthrough's `event: error`): the error is the last event.
    const last = JSON.parse(read.events[read.events.length - 1]!.data) as { code?: string; error?: { code?: string } };
    expect(last.error?.code ?? last.code).toBe('ERR_TIDEGATE_SSE_LIMIT');
    await upstreamClosed;
    expect(await bufferedBytes()).toBe(0);
  });
});
