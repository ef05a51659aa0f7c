import * as http from 'node:http';
import OpenAI from 'openai';
import { createSimulator, Simulator } from '../../src/simulator';
import { nextEvent } from './helpers';

describe('simulator lifecycle', () => {
  let sim: Simulator;
  let url: string;

  beforeEach(async () => {
    sim = createSimulator({ tokensPerSecond: 50, ttftMs: 0 });
    url = (await sim.listen()).url;
  });

  afterEach(async () => {
    await sim.close();
  });

  it('emits request-aborted within 1 s when the SDK aborts mid-stream', async () => {
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const ac = new AbortController();
    const aborted = nextEvent(sim, 'request-aborted', 1000);
    const stream = await openai.chat.completions.create({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { signal: ac.signal });
    let seen = 0;
    try {
      for await (const c of stream) {
        if (c.choices[0]?.delta.content && ++seen === 3) ac.abort();
      }
    } catch {
      // AbortError
    }
    const record = await aborted;
    expect(record.outcome).toBe('aborted');
    expect(record.tokensWritten).toBeLessThan(50);
    expect(sim.stats).toMatchObject({ active: 0, aborted: 1, completed: 0 });
  });

  it('counts a client that leaves during the time to first token as aborted', async () => {
    sim.configure({ ttftMs: 10_000 });
    const aborted = nextEvent(sim, 'request-aborted', 1000);
    const req = http.request(`${url}/v1/messages`, { method: 'POST', agent: false });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'sim', max_tokens: 10, stream: true, messages: [] }));
    await nextEvent(sim, 'request', 1000);
    req.destroy();
    expect((await aborted).status).toBe(0);
  });

  it('close() ends running streams as closed and frees the port', async () => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false });
    req.on('error', () => undefined);
    req.on('response', (res) => res.on('error', () => undefined).resume());
    req.end(JSON.stringify({ model: 'sim', stream: true, messages: [] }));
    await nextEvent(sim, 'request', 1000);
    await sim.close();
    expect(sim.stats).toMatchObject({ active: 0, closed: 1, aborted: 0 });
    expect(sim.server.listening).toBe(false);
  });

  it('serves /healthz and /v1/models without counting them as requests', async () => {
    const get = (path: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        http
          .get(`${url}${path}`, { agent: false }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
    expect((await get('/healthz')).status).toBe(200);
    const models = JSON.parse((await get('/v1/models')).body) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain('sim-zh');
    expect((await get('/nope')).status).toBe(404);
    expect(sim.stats.requests).toBe(0);
  });

  it('validates options', () => {
    expect(() => createSimulator({ tokensPerSecond: 0 })).toThrow(RangeError);
    expect(() => sim.configure({ ttftMs: -1 })).toThrow(RangeError);
  });
});
