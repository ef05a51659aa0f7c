import OpenAI from 'openai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { findTranscript, transcriptText } from '../../src/simulator';
import { upstreamAgent } from '../../src/http/request';
import { waitFor } from '../harness/net';

let gateway: RunningGateway;

beforeAll(async () => {
  const config = parseConfig({ port: 0, simulator: { tokensPerSecond: 100, ttftMs: 50 } });
  gateway = await startGateway(config, { logger: createLogger({ silent: true }) });
});
afterAll(() => gateway.close());

describe('walking skeleton: gateway + embedded simulator + official OpenAI SDK', () => {
  it('streams the transcript byte for byte (CJK and emoji), first chunk well before the last', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused' });
    const stream = await client.chat.completions.create({ model: 'sim-zh', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    const arrivals: number[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) {
        text += delta;
        arrivals.push(Date.now());
      }
    }
    const expected = transcriptText(findTranscript('sim-zh')!);
    expect(Buffer.from(text)).toEqual(Buffer.from(expected));
    expect(expected).toMatch(/\p{Script=Han}/u);
    expect(expected).toMatch(/\u{1F30A}/u); // 🌊, four bytes in UTF-8
    // Tokens are paced by the upstream and relayed as they come, not collected.
    const spanMs = arrivals[arrivals.length - 1] - arrivals[0];
    const expectedSpanMs = ((arrivals.length - 1) / 100) * 1000;
    expect(spanMs).toBeGreaterThan(expectedSpanMs * 0.5);
  });

  it('aborts the upstream request within 1 s when the client disconnects, leaving no upstream socket', async () => {
    const sim = gateway.simulator!;
    const abortedBefore = sim.stats.aborted;
    const controller = new AbortController();
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused' });
    const stream = await client.chat.completions.create(
      { model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _chunk of stream) {
        if (++chunks === 3) break; // leaving the loop aborts the HTTP request
      }
    } catch {
      /* aborted */
    }
    const leftAt = Date.now();
    await waitFor(() => sim.stats.aborted > abortedBefore, 1000);
    expect(Date.now() - leftAt).toBeLessThan(1000);
    await waitFor(() => sim.stats.active === 0, 1000);
    const agent = upstreamAgent(new URL(gateway.upstreamUrl));
    const open = Object.values(agent.sockets).reduce((n, list) => n + (list?.length ?? 0), 0);
    expect(open).toBe(0);
  });
});

describe('npm start (the built CLI)', () => {
  let child: ChildProcess | undefined;
  // Waits for the CLI to exit (SIGKILL after 5 s): a child still running holds this test
  // worker open, and jest then force-exits it with a warning.
  afterEach(async () => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    const kill = setTimeout(() => c.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(kill);
  });

  it('starts on PORT with the embedded simulator and serves a stream', async () => {
    const cli = path.join(__dirname, '../../dist/gateway/cli.js');
    child = spawn(process.execPath, [cli], { env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const t = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 10_000);
      child!.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]);
        }
      });
    });
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-basic', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    expect(body).toMatch(/"delta":\{"content":"[^"]+"/);
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
