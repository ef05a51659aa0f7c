import fs from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSimulator, type Simulator } from '../../src/simulator';
import { waitFor } from '../harness/net';
import { CaptureTransport } from './helpers';

// A stream still running when the shutdown grace is over ends with ERR_TIDEGATE_SHUTDOWN in its
// client's protocol, which docs/gateway.md's Shutdown table states per route.

const ROUTES: Record<string, { path: string; body: unknown }> = {
  chat: { path: '/v1/chat/completions', body: { model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] } },
  completions: { path: '/v1/completions', body: { model: 'sim', stream: true, prompt: 'hi' } },
  responses: { path: '/v1/responses', body: { model: 'sim', stream: true, input: 'hi' } },
  messages: { path: '/v1/messages', body: { model: 'sim', stream: true, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] } },
  passthrough: { path: '/events', body: { model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] } },
};

/**
 * The docs' Shutdown table by route kind: the code spans of each row's second cell, each split
 * at its `…` into pieces that must appear in that order in the stream's last frames.
 */
function documented(): Record<string, string[]> {
  const doc = fs.readFileSync(path.join(__dirname, '../../docs/gateway.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Shutdown'), doc.indexOf('## Logs'));
  const rows: Record<string, string[]> = {};
  for (const m of section.matchAll(/^\| ([a-z:, ]+) \| ([^|]+) \|/gm)) {
    const pieces = [...m[2].matchAll(/`([^`]+)`/g)].flatMap((c) => c[1].split('…'));
    for (const kind of m[1].replace(/^\w+: /, '').split(', ')) rows[kind] = pieces;
  }
  return rows;
}

describe('shutdown frames', () => {
  let sim: Simulator;
  let gw: RunningGateway;
  const bodies: Record<string, string> = {};

  beforeAll(async () => {
    // Slow enough that every stream is still running when the grace is over.
    sim = createSimulator({ tokensPerSecond: 2, ttftMs: 0 });
    const { url } = await sim.listen(0, '127.0.0.1');
    const config = parseConfig({
      port: 0,
      upstream: { url },
      stream: { heartbeatMs: 0 },
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/completions', provider: 'openai' },
        { path: '/v1/responses', provider: 'openai' },
        { path: '/v1/messages', provider: 'anthropic' },
        { path: '/events', provider: 'passthrough', url: `${url}/v1/chat/completions` },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
    const done = Object.entries(ROUTES).map(async ([kind, r]) => {
      const res = await fetch(`${gw.url}${r.path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(r.body) });
      bodies[kind] = await res.text();
    });
    await waitFor(() => gw.app.gateway.activeStreams === Object.keys(ROUTES).length, 5000);
    await new Promise((r) => setTimeout(r, 700));
    await gw.shutdown(50);
    await Promise.all(done);
  }, 20_000);
  afterAll(() => sim.close());

  it.each(Object.keys(ROUTES))('ends a %s stream with the documented frame', (kind) => {
    const frames = bodies[kind].trimEnd().split('\n\n');
    const pieces = documented()[kind];
    expect(pieces?.length).toBeGreaterThan(0);
    // From the frame that carries the code: the documented pieces, in order, the first at its start.
    const cut = frames.findIndex((f) => f.includes('ERR_TIDEGATE_SHUTDOWN'));
    expect(cut).toBeGreaterThanOrEqual(0);
    const tail = frames.slice(cut).join('\n\n');
    expect(tail.startsWith(pieces[0])).toBe(true);
    let at = 0;
    for (const piece of pieces) {
      const found = tail.indexOf(piece, at);
      expect([piece, found >= 0]).toEqual([piece, true]);
      at = found + piece.length;
    }
  });
});
