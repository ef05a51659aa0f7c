/**
 * A gzip upstream at a budget below ~66 KiB relays events with demand in bytes
 * (smallEventBytes, maxElementBytes). Events up to the cap pass byte-exact, an event
 * above it is ERR_TIDEGATE_SSE_LIMIT after every whole event before it, a paused client stays
 * within the budget, the OpenAI route too.
 */
import type http from 'node:http';
import zlib from 'node:zlib';

import { RawClient, waitFor } from '../harness/net';
import { oaChunk, sampleBuffered, type ScriptedUpstream, type Step, useRelayHarness } from '../harness/relay-harness';

const KIB = 1024;
const MIN = 30 * KIB; // 16 KiB socket mark + 6 KiB slack + 8 KiB: smallEventBytes = 8192 here
const CAP = MIN - 16 * KIB - 6 * KIB;

function gzipScript(up: ScriptedUpstream, name: string, plain: string): void {
  const gz = zlib.gzipSync(plain);
  up.scripts.set(name, (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    const steps: Step[] = [];
    for (let i = 0; i < gz.length; i += 512) steps.push(gz.subarray(i, i + 512));
    return steps;
  });
}

describe('gzip upstream at a small budget relays events with demand in bytes', () => {
  const h = useRelayHarness((url) => {
    const routes = [route('/cap'), route('/cap-paused'), route('/over'), route('/lines'), route('/lines-fast'), route('/b48', 48 * KIB), { path: '/v1/chat/completions', provider: 'openai', url: `${url}/oa`, policy: { maxBufferedBytes: MIN, overflow: 'pause', stallTimeoutMs: 0 } }];
    return routes;
  });
  const { clients } = h;
  const route = (path: string, budget = MIN): Record<string, unknown> => ({ path, provider: 'passthrough', url: `${h.up.url}${path}`, policy: { maxBufferedBytes: budget, overflow: 'pause', stallTimeoutMs: 0 } });

  async function run(path: string, pauseMs: number, options: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ line: Record<string, unknown>; gauge: number; body: string }> {
    const before = h.logs.streams().length;
    const client = await RawClient.request(h.gw.port, path, options);
    clients.push(client);
    let gauge = 0;
    if (pauseMs > 0) {
      client.readSome(1000);
      gauge = await sampleBuffered(h.gw.url, pauseMs);
    }
    client.readAll();
    expect(await client.waitClosed(15_000)).toBe(true);
    const mine = (): Record<string, unknown> | undefined => (h.logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === path);
    await waitFor(() => mine() !== undefined, 5000);
    return { line: mine() as Record<string, unknown>, gauge, body: client.body() };
  }

  // The cap is maxLineBytes = smallEventBytes on the whole line: `data: ` + CAP - 6 bytes.
  it('events whose data line is exactly the cap complete byte-exact for a fast client', async () => {
    const event = `data: ${'c'.repeat(CAP - 6)}\n\n`;
    gzipScript(h.up, '/cap', event.repeat(300));
    const { line, body } = await run('/cap', 0);
    expect(line.outcome).toBe('completed');
    expect(body === event.repeat(300)).toBe(true);
  });

  it('events at the cap stay within the budget while the client is paused, then complete', async () => {
    const event = `data: ${'p'.repeat(CAP - 7)}\n\n`;
    gzipScript(h.up, '/cap-paused', event.repeat(600));
    const { line, gauge, body } = await run('/cap-paused', 800);
    expect(line.outcome).toBe('completed');
    expect(body === event.repeat(600)).toBe(true);
    expect(gauge).toBeLessThanOrEqual(MIN);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(MIN);
  });

  it('an event above the cap ends with ERR_TIDEGATE_SSE_LIMIT after every whole event before it', async () => {
    const ok = `data: ${'o'.repeat(1000)}\n\n`;
    gzipScript(h.up, '/over', ok.repeat(20) + `data: ${'X'.repeat(CAP + 1)}\n\n` + ok.repeat(5));
    const { line, body } = await run('/over', 0);
    expect(line.errorCode).toBe('ERR_TIDEGATE_SSE_LIMIT');
    expect(body.startsWith(ok.repeat(20))).toBe(true);
    expect(body.slice(ok.length * 20)).toMatch(/^event: error\n/);
  });

  // The parser's maxEventBytes counts DATA bytes (lines joined by LF), but the re-encoded wire
  // frame adds `data: ` and LF per line. An event of many short data lines, within the cap by the
  // parser's count (4096 lines of 'a': 8191 data bytes, 28 KiB upstream, 32 KiB re-encoded), is
  // bigger than maxElementBytes (smallEventBytes + WIRE_MARGIN_BYTES = 8256: `data:a` upstream
  // becomes `data: a`) and bigger than the budget. The bridge refuses such an element as an SSE
  // limit; the stream never ends with ERR_TIDEGATE_OVERFLOW.
  it.each([
    ['/lines', 'data:a\n', 4096, 800],
    ['/lines-fast', 'data\n', 4000, 0],
  ])('%s: an event of many short data lines within maxEventBytes is relayed or is an SSE limit, never an overflow', async (path, lineText, lines, pauseMs) => {
    const ok = `data: ${'o'.repeat(1000)}\n\n`;
    const big = lineText.repeat(lines) + '\n';
    gzipScript(h.up, path, ok.repeat(3) + big + ok.repeat(3));
    const { line, body } = await run(path, pauseMs);
    expect(body.startsWith(ok.repeat(3))).toBe(true);
    // An oversized event is logged as outcome upstream_error with ERR_TIDEGATE_SSE_LIMIT.
    expect(line.outcome === 'completed' || line.errorCode === 'ERR_TIDEGATE_SSE_LIMIT').toBe(true);
    if (line.outcome === 'completed') expect(body.endsWith(ok.repeat(3))).toBe(true);
  });

  it('at 48 KiB (cap 26 KiB) a paused stream of 20 KiB events stays in the budget and completes', async () => {
    const event = `data: ${'q'.repeat(20 * KIB)}\n\n`;
    gzipScript(h.up, '/b48', event.repeat(200));
    const { line, gauge, body } = await run('/b48', 800);
    expect(line.outcome).toBe('completed');
    expect(body === event.repeat(200)).toBe(true);
    expect(gauge).toBeLessThanOrEqual(48 * KIB);
    expect(line.peakBufferedBytes as number).toBeLessThanOrEqual(48 * KIB);
  });

  it('the OpenAI route with a gzip upstream at the smallest budget completes for a paused then reading client', async () => {
    const chunks = [oaChunk(null)];
    for (let i = 0; i < 3000; i++) chunks.push(oaChunk(`tok${i} ${'w'.repeat(i % 200)}`));
    chunks.push('data: [DONE]\n\n');
    gzipScript(h.up, '/oa', chunks.join(''));
    const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const { line, gauge, body: out } = await run('/v1/chat/completions', 500, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(line.outcome).toBe('completed');
    expect(out).toContain('tok2999 ');
    expect(out.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(gauge).toBeLessThanOrEqual(MIN);
  });
});
