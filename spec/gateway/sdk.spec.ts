import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { BUILTIN_TRANSCRIPTS, transcriptText } from '../../src/simulator';
import { startTestGateway, type TestGateway } from './helpers';

const ZH = transcriptText(BUILTIN_TRANSCRIPTS['sim-zh']);
const ZH_TOKENS = BUILTIN_TRANSCRIPTS['sim-zh'].tokens.length;

let t: TestGateway;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  t = await startTestGateway();
  openai = new OpenAI({ baseURL: `${t.gateway.url}/v1`, apiKey: 'client-key-not-forwarded', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: t.gateway.url, apiKey: 'client-key-not-forwarded', maxRetries: 0 });
});
afterAll(() => t.close());

describe('gateway: official OpenAI SDK', () => {
  it('streams exactly the simulator text and receives usage', async () => {
    const stream = await openai.chat.completions.create({
      model: 'sim-zh',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(Buffer.from(text).equals(Buffer.from(ZH))).toBe(true);
    expect(usage?.completion_tokens).toBe(ZH_TOKENS);
    const line = t.logs.streams().at(-1);
    expect(line).toMatchObject({ outcome: 'completed', route: '/v1/chat/completions', outputTokens: ZH_TOKENS, status: 200 });
  });

  it('raises the provider message when the upstream sends an error frame mid-stream', async () => {
    const stream = await openai.chat.completions.create(
      { model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': 'error-midstream' } },
    );
    let chunks = 0;
    const consume = async (): Promise<void> => {
      for await (const _ of stream) chunks++;
    };
    await expect(consume()).rejects.toThrow(/The server had an error while processing your request/);
    expect(chunks).toBeGreaterThan(0);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_error', errorCode: 'ERR_TIDEGATE_UPSTREAM_ERROR' });
  });

  it('returns the upstream JSON unchanged for a non-stream request', async () => {
    const completion = await openai.chat.completions.create({ model: 'sim-zh', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].message.content).toBe(ZH);
    expect(completion.usage?.completion_tokens).toBe(ZH_TOKENS);
  });

  it('does not forward the client key upstream', async () => {
    const seen: (string | undefined)[] = [];
    t.sim.server.once('request', (req) => seen.push(req.headers.authorization));
    await openai.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] });
    expect(seen).toEqual([undefined]);
  });
});

describe('gateway: official OpenAI SDK, large requests within the body limits', () => {
  /** A long agent conversation: `rounds` of a question, a tool call, its result and an answer. */
  const conversation = (rounds: number): OpenAI.ChatCompletionMessageParam[] =>
    Array.from({ length: rounds }, (_, i): OpenAI.ChatCompletionMessageParam[] => [
      { role: 'user', content: `question ${i}: what does the file say?` },
      { role: 'assistant', content: null, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/file-${i}.ts` }) } }] },
      { role: 'tool', tool_call_id: `call_${i}`, content: `export const value${i} = ${i};` },
      { role: 'assistant', content: `The file exports value${i}.` },
    ]).flat();

  it('relays a conversation of 4000 messages with tool calls', async () => {
    const tools: OpenAI.ChatCompletionTool[] = Array.from({ length: 64 }, (_, i) => ({
      type: 'function',
      function: { name: `tool_${i}`, description: 'reads a file', parameters: { type: 'object', properties: { path: { type: 'string', description: 'the path' } }, required: ['path'] } },
    }));
    const stream = await openai.chat.completions.create({ model: 'sim', stream: true, messages: conversation(1000), tools });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('relays a message whose content is a 1 MB string', async () => {
    const stream = await openai.chat.completions.create({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'x'.repeat(1_000_000) }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('raises a 413 the SDK reads for a body of too many values', async () => {
    const messages = Array.from({ length: 25_000 }, () => ({ role: 'user' as const, content: 'a' }));
    const failed = await openai.chat.completions.create({ model: 'sim', stream: true, messages }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect(failed).toMatchObject({ status: 413, code: 'ERR_TIDEGATE_BODY_TOO_MANY_VALUES' });
  });
});

describe('gateway: official Anthropic SDK', () => {
  it('streams exactly the simulator text and receives usage', async () => {
    const stream = await anthropic.messages.create({ model: 'sim-zh', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let outputTokens: number | undefined;
    for await (const ev of stream) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
      if (ev.type === 'message_delta') outputTokens = ev.usage.output_tokens;
    }
    expect(Buffer.from(text).equals(Buffer.from(ZH))).toBe(true);
    expect(outputTokens).toBe(ZH_TOKENS);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'completed', route: '/v1/messages', outputTokens: ZH_TOKENS });
  });

  it('assembles the final message with the SDK stream helper', async () => {
    const final = await anthropic.messages.stream({ model: 'sim-zh', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: ZH });
    expect(final.usage.output_tokens).toBe(ZH_TOKENS);
  });

  it('raises overloaded_error when the upstream sends event: error mid-stream', async () => {
    const stream = await anthropic.messages.create(
      { model: 'sim', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': 'error-midstream' } },
    );
    const consume = async (): Promise<void> => {
      for await (const _ of stream) void _;
    };
    await expect(consume()).rejects.toThrow(/Overloaded/);
  });

  it('raises the SDK error with type overloaded_error', async () => {
    const stream = await anthropic.messages.create(
      { model: 'sim', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': 'error-midstream' } },
    );
    let caught: unknown;
    try {
      for await (const _ of stream) void _;
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(Anthropic.APIError);
    expect((caught as { error: { error: { type: string } } }).error.error.type).toBe('overloaded_error');
  });

  it('returns a Message JSON for a non-stream request', async () => {
    const msg = await anthropic.messages.create({ model: 'sim-zh', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: ZH });
  });
});

describe('gateway: non-stream fallback (route stream: false)', () => {
  let fallback: TestGateway;
  beforeAll(async () => {
    fallback = await startTestGateway({
      config: { upstream: { apiKey: 'sk-configured' } },
      routes: [{ path: '/v1/chat/completions', provider: 'openai', stream: false }],
    });
  });
  afterAll(() => fallback.close());

  it('answers a stream request with the upstream full response as one JSON', async () => {
    const res = await fetch(`${fallback.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-zh', stream: true, stream_options: { include_usage: true }, messages: [] }),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0].message.content).toBe(ZH);
  });

  it('sends the configured key upstream, never the client one', async () => {
    const seen: (string | undefined)[] = [];
    fallback.sim.server.once('request', (req) => seen.push(req.headers.authorization));
    await fetch(`${fallback.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
      body: JSON.stringify({ model: 'sim', messages: [] }),
    });
    expect(seen).toEqual(['Bearer sk-configured']);
  });
});
