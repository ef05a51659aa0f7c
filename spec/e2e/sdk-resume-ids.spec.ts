import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { SIM_HEADERS, startTestGateway, type TestGateway } from '../gateway/helpers';
import { readSse } from '../gateway/resume/helpers';

// On a resumable route every event carries `id: <streamId>:<seq>`; the official SDKs ignore the
// id lines and read the same answer as on a route without resume.

let t: TestGateway;
const forwardHeaders = ['content-type', 'anthropic-version', ...SIM_HEADERS];

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 2000, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders },
      { path: '/v1/messages', provider: 'anthropic', forwardHeaders },
      { path: '/resume/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: true },
      { path: '/resume/v1/messages', upstreamPath: '/v1/messages', provider: 'anthropic', forwardHeaders, resume: true },
    ],
  });
});
afterAll(() => t.close());

async function openaiText(prefix: string): Promise<{ text: string; usage: unknown }> {
  const client = new OpenAI({ baseURL: `${t.gateway.url}${prefix}/v1`, apiKey: 'k', maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'sim-zh', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  let usage: unknown;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage };
}

async function anthropicText(prefix: string, model = 'sim-zh'): Promise<{ text: string; usage: unknown }> {
  const client = new Anthropic({ baseURL: `${t.gateway.url}${prefix}`, apiKey: 'k', maxRetries: 0 });
  const stream = await client.messages.create({ model, max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  let usage: unknown;
  for await (const e of stream) {
    if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    if (e.type === 'message_delta') usage = e.usage;
  }
  return { text, usage };
}

describe('the official SDKs on a resumable route', () => {
  it('openai reads the same answer with the id lines as without', async () => {
    const ids = await readSse(`${t.gateway.url}/resume/v1/chat/completions`, { body: { model: 'sim-zh', stream: true, messages: [] } });
    await ids.ended;
    expect(ids.events.every((e) => /^[0-9a-f]{32}:\d+$/.test(e.lastEventId))).toBe(true);
    const [plain, resumable] = await Promise.all([openaiText(''), openaiText('/resume')]);
    expect(resumable.text.length).toBeGreaterThan(10);
    expect(resumable).toEqual(plain);
  });

  it('@anthropic-ai/sdk reads the same answer with the id lines as without', async () => {
    const ids = await readSse(`${t.gateway.url}/resume/v1/messages`, { body: { model: 'sim-zh', max_tokens: 100, stream: true, messages: [] } });
    await ids.ended;
    expect(ids.events.length).toBeGreaterThan(3);
    expect(ids.events.every((e) => /^[0-9a-f]{32}:\d+$/.test(e.lastEventId))).toBe(true);
    const [plain, resumable] = await Promise.all([anthropicText(''), anthropicText('/resume')]);
    expect(resumable.text.length).toBeGreaterThan(10);
    expect(resumable).toEqual(plain);
  });

  it('@anthropic-ai/sdk: the events the SDK yields count the seqs (ping has none), so ?after=<count> resumes with no duplicate', async () => {
    const body = { model: 'sim-claude', max_tokens: 1000, stream: true as const, messages: [{ role: 'user' as const, content: 'hi' }] };
    const direct = await anthropicText('', 'sim-claude');
    const client = new Anthropic({ baseURL: `${t.gateway.url}/resume`, apiKey: 'k', maxRetries: 0 });
    const { data: stream, response } = await client.messages.create(body).withResponse();
    const streamId = String(response.headers.get('x-tidegate-stream-id'));
    let count = 0;
    let text = '';
    for await (const e of stream) {
      count++;
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (count === 6) break;
    }
    const rest = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=${count}`, { headers: { 'x-api-key': 'k' } });
    await rest.ended;
    expect(rest.status).toBe(200);
    for (const e of rest.events) {
      const data = JSON.parse(e.data) as { type: string; delta?: { type: string; text?: string } };
      if (data.type === 'content_block_delta' && data.delta?.type === 'text_delta') text += data.delta.text;
    }
    expect(direct.text.length).toBeGreaterThan(10);
    expect(text).toBe(direct.text);
  });
});
