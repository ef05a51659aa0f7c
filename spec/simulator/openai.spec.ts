import * as http from 'node:http';
import OpenAI from 'openai';
import { BUILTIN_TRANSCRIPTS, createSimulator, Simulator, transcriptText } from '../../src/simulator';
import { dataLines, postRaw, until } from './helpers';

const ZH = transcriptText(BUILTIN_TRANSCRIPTS['sim-zh']);
const BASIC = transcriptText(BUILTIN_TRANSCRIPTS['sim-basic']);

describe('simulator: OpenAI chat.completions', () => {
  let sim: Simulator;
  let client: OpenAI;
  let url: string;

  beforeEach(async () => {
    sim = createSimulator({ tokensPerSecond: 1000, ttftMs: 10 });
    url = (await sim.listen()).url;
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });

  afterEach(async () => {
    await sim.close();
  });

  async function streamText(model: string): Promise<{ text: string; chunks: OpenAI.ChatCompletionChunk[] }> {
    const stream = await client.chat.completions.create({
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    let text = '';
    for await (const c of stream) {
      chunks.push(c);
      text += c.choices[0]?.delta.content ?? '';
    }
    return { text, chunks };
  }

  it('streams the CJK + emoji transcript byte for byte to the official SDK', async () => {
    const { text } = await streamText('sim-zh');
    expect(Buffer.from(text, 'utf8').equals(Buffer.from(ZH, 'utf8'))).toBe(true);
  });

  it('streams intact text when multi-byte characters straddle socket writes (sim-zh-split)', async () => {
    const { text } = await streamText('sim-zh-split');
    expect(text).toBe(ZH);
  });

  it('writes sim-zh-split so that a multi-byte character straddles two received chunks', async () => {
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim-zh-split', stream: true, messages: [] });
    // A chunk ending inside a character fails a strict decode; the whole body does not.
    const strict = new TextDecoder('utf-8', { fatal: true });
    const cut = res.chunks.filter((c) => {
      try {
        strict.decode(c.data);
        return false;
      } catch {
        return true;
      }
    });
    expect(cut.length).toBeGreaterThan(0);
    expect(() => strict.decode(res.body)).not.toThrow();
  });

  it('sends role first, then content, finish_reason, usage with choices [], then [DONE]', async () => {
    const res = await postRaw(url, '/v1/chat/completions', {
      model: 'sim-basic',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const lines = dataLines(res.body);
    expect(lines[lines.length - 1]).toBe('[DONE]');
    const json = lines.slice(0, -1).map((l) => JSON.parse(l) as OpenAI.ChatCompletionChunk);
    expect(json[0].choices[0].delta).toEqual({ role: 'assistant', content: '', refusal: null });
    const content = json.slice(1, 1 + BUILTIN_TRANSCRIPTS['sim-basic'].tokens.length);
    expect(content.map((c) => c.choices[0].delta.content).join('')).toBe(BASIC);
    const finish = json[json.length - 2];
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    const usage = json[json.length - 1];
    expect(usage.choices).toEqual([]);
    expect(usage.usage?.completion_tokens).toBe(BUILTIN_TRANSCRIPTS['sim-basic'].tokens.length);
  });

  it('omits the usage chunk unless stream_options.include_usage is true', async () => {
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] });
    const json = dataLines(res.body)
      .slice(0, -1)
      .map((l) => JSON.parse(l) as OpenAI.ChatCompletionChunk);
    expect(json.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
  });

  it('echoes the requested model and falls back to the default transcript for unknown models', async () => {
    sim.configure({ defaultTranscript: 'sim-basic' });
    const { text, chunks } = await streamText('gpt-4o-mini');
    expect(text).toBe(BASIC);
    expect(chunks[0].model).toBe('gpt-4o-mini');
  });

  it('selects the transcript with the x-sim-transcript header', async () => {
    const res = await postRaw(url, '/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [] }, { 'x-sim-transcript': 'sim-claude' });
    expect(res.headers['x-sim-transcript']).toBe('sim-claude');
  });

  it('cuts the transcript at max_tokens and finishes with length', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-basic', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.choices[0].message.content).toBe(BUILTIN_TRANSCRIPTS['sim-basic'].tokens.slice(0, 4).join(''));
  });

  it('returns a chat.completion JSON when stream is absent', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-zh', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message).toMatchObject({ role: 'assistant', content: ZH });
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage?.completion_tokens).toBe(BUILTIN_TRANSCRIPTS['sim-zh'].tokens.length);
  });

  it('answers malformed JSON with a 400 in the OpenAI error shape', async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false }, (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (d: string) => (body += d));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end('{not json');
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(sim.stats.rejected).toBe(1);
  });

  it('answers a stream flag that is not a boolean with a 400, as the real API does', async () => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-basic', stream: 'true', messages: [] }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('stream must be a boolean') } });
  });

  it('counts a completed stream and its bytes', async () => {
    const res = await postRaw(url, '/v1/chat/completions', { model: 'sim-basic', stream: true, messages: [] });
    // 'close' on the server side may trail the client's 'end' by a tick.
    await until(() => sim.stats.active === 0);
    expect(sim.stats).toMatchObject({ requests: 1, active: 0, completed: 1, aborted: 0, bytesWritten: res.body.length });
    expect(sim.requests[0]).toMatchObject({ outcome: 'completed', tokensWritten: 30, transcript: 'sim-basic', route: 'openai' });
  });
});
