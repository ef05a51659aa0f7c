import Anthropic from '@anthropic-ai/sdk';
import * as http from 'node:http';
import OpenAI from 'openai';
import { BUILTIN_TRANSCRIPTS, createSimulator, parseFault, Simulator } from '../../src/simulator';
import { dataLines, eventNames, postRaw, until, nextEvent } from './helpers';

const BASIC = BUILTIN_TRANSCRIPTS['sim-basic'].tokens;

describe('parseFault', () => {
  it('accepts the named faults and status codes 400-599', () => {
    expect(parseFault(' Reset ')).toBe('reset');
    expect(parseFault('status:429')).toBe('status:429');
    expect(parseFault('status:200')).toBeUndefined();
    expect(parseFault('explode')).toBeUndefined();
  });
});

describe('simulator faults', () => {
  let sim: Simulator;
  let url: string;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeEach(async () => {
    sim = createSimulator({ tokensPerSecond: 1000, ttftMs: 0 });
    url = (await sim.listen()).url;
    openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: url, apiKey: 'sk-ant-test', maxRetries: 0 });
  });

  afterEach(async () => {
    await sim.close();
  });

  async function drainOpenai(headers: Record<string, string>): Promise<{ text: string; error: unknown }> {
    let text = '';
    try {
      const stream = await openai.chat.completions.create(
        { model: 'sim-basic', stream: true, messages: [{ role: 'user', content: 'hi' }] },
        { headers },
      );
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
      return { text, error: undefined };
    } catch (error) {
      return { text, error };
    }
  }

  it('error-midstream: OpenAI SDK raises APIError after faultAfterTokens tokens, no [DONE]', async () => {
    const { text, error } = await drainOpenai({ 'x-sim-fault': 'error-midstream' });
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe(BASIC.slice(0, 3).join(''));
    const raw = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] }, { 'x-sim-fault': 'error-midstream' });
    const lines = dataLines(raw.body);
    expect(lines).not.toContain('[DONE]');
    expect(JSON.parse(lines[lines.length - 1])).toMatchObject({ error: { type: 'server_error' } });
  });

  it('error-midstream: Anthropic SDK raises overloaded_error; no message_stop', async () => {
    const stream = anthropic.messages.stream(
      { model: 'sim-basic', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': 'error-midstream', 'x-sim-fault-after': '1' } },
    );
    await expect(stream.finalMessage()).rejects.toMatchObject({ error: { error: { type: 'overloaded_error' } } });
    const raw = await postRaw(url, '/v1/messages', { model: 'sim-basic', max_tokens: 100, stream: true, messages: [] }, { 'x-sim-fault': 'error-midstream', 'x-sim-fault-after': '1' });
    expect(eventNames(raw.body)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'error']);
  });

  it('truncate: ends cleanly after the tokens without finish frames or [DONE]', async () => {
    const raw = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] }, { 'x-sim-fault': 'truncate', 'x-sim-fault-after': '5' });
    const lines = dataLines(raw.body);
    expect(lines).toHaveLength(1 + 5);
    expect(lines).not.toContain('[DONE]');
    await until(() => sim.stats.active === 0);
    expect(sim.requests[0].outcome).toBe('faulted');
  });

  it('reset: destroys the connection mid-stream; the SDK sees a connection error', async () => {
    const { text, error } = await drainOpenai({ 'x-sim-fault': 'reset', 'x-sim-fault-after': '2' });
    // undici reports the cut body as `TypeError: terminated` (from another realm under jest); when
    // the RST discards the response head still unread in the receive buffer, the SDK reports an
    // APIConnectionError ("Connection error.") instead.
    expect(String((error as { message?: unknown } | undefined)?.message)).toMatch(/terminated|reset|socket|connection error/i);
    // An RST may discard bytes still unread in the client's receive buffer: a prefix at most.
    expect(BASIC.slice(0, 2).join('').startsWith(text)).toBe(true);
    expect(sim.requests[0].tokensWritten).toBe(2);
    await until(() => sim.stats.active === 0);
    expect(sim.stats).toMatchObject({ faulted: 1, aborted: 0 });
  });

  it('status:429: answers 429 with Retry-After and an OpenAI rate-limit body', async () => {
    sim.configure({ retryAfterSeconds: 7 });
    const raw = await postRaw(url, '/v1/chat/completions', { model: 'sim', stream: true, messages: [] }, { 'x-sim-fault': 'status:429' });
    expect(raw.status).toBe(429);
    expect(raw.headers['retry-after']).toBe('7');
    expect(JSON.parse(raw.body.toString('utf8'))).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
    await expect(drainOpenai({ 'x-sim-fault': 'status:429' })).resolves.toMatchObject({ error: expect.any(OpenAI.RateLimitError) });
  });

  it('status:400: answers a JSON error in the Anthropic shape on /v1/messages', async () => {
    const raw = await postRaw(url, '/v1/messages', { model: 'sim', max_tokens: 10, stream: true, messages: [] }, { 'x-sim-fault': 'status:400' });
    expect(raw.status).toBe(400);
    expect(raw.headers['retry-after']).toBeUndefined();
    expect(JSON.parse(raw.body.toString('utf8'))).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('hang: sends headers and then nothing; the client leaving is counted as aborted', async () => {
    const aborted = nextEvent(sim, 'request-aborted', 2000);
    const headersSeen = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (d: Buffer) => (bytes += d.length));
        // Wait a little for body bytes that must not come, then leave.
        setTimeout(() => {
          req.destroy();
          resolve(bytes);
        }, 150);
        res.on('error', () => undefined);
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      });
      req.on('error', () => undefined);
      req.setHeader('x-sim-fault', 'hang');
      req.end(JSON.stringify({ model: 'sim-basic', stream: true, messages: [] }));
    });
    expect(headersSeen).toBe(0);
    expect((await aborted).fault).toBe('hang');
  });

  it('stall: writes faultAfterTokens tokens, then nothing until the client leaves', async () => {
    sim.configure({ fault: 'stall', faultAfterTokens: 2 });
    const ac = new AbortController();
    const got: string[] = [];
    const aborted = nextEvent(sim, 'request-aborted', 2000);
    const stream = await openai.chat.completions.create(
      { model: 'sim-basic', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { signal: ac.signal },
    );
    const timer = setTimeout(() => ac.abort(), 300);
    try {
      for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
    } catch {
      // aborted by us
    }
    clearTimeout(timer);
    expect(got.join('')).toBe(BASIC.slice(0, 2).join(''));
    expect((await aborted).tokensWritten).toBe(2);
  });

  it('rejects an unknown x-sim-fault with 400', async () => {
    const raw = await postRaw(url, '/v1/chat/completions', { model: 'sim', stream: true, messages: [] }, { 'x-sim-fault': 'meteor' });
    expect(raw.status).toBe(400);
  });
});
