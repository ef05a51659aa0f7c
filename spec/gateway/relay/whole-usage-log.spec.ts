import { startTestGateway, type TestGateway } from '../helpers';

// A whole (non-stream) answer's log line carries the token counts of the answer's own `usage`,
// as a stream's line carries those its events reported.

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({
    routes: [
      { path: '/v1/chat/completions', provider: 'openai' },
      { path: '/v1/responses', provider: 'openai' },
      { path: '/v1/messages', provider: 'anthropic' },
    ],
  });
});
afterAll(() => t.close());

async function whole(path: string, body: Record<string, unknown>): Promise<{ usage: Record<string, number> }> {
  const res = await fetch(`${t.gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return (await res.json()) as { usage: Record<string, number> };
}

describe('the log line of a whole answer', () => {
  it('logs the prompt and completion tokens of an OpenAI chat answer', async () => {
    const answer = await whole('/v1/chat/completions', { model: 'sim', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.usage.completion_tokens).toBeGreaterThan(0);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/chat/completions', stream: false, inputTokens: answer.usage.prompt_tokens, outputTokens: answer.usage.completion_tokens });
  });

  it('logs the input and output tokens of a Responses answer', async () => {
    const answer = await whole('/v1/responses', { model: 'sim', input: 'hi' });
    expect(answer.usage.output_tokens).toBeGreaterThan(0);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/responses', stream: false, inputTokens: answer.usage.input_tokens, outputTokens: answer.usage.output_tokens });
  });

  it('logs the input and output tokens of an Anthropic Messages answer', async () => {
    const answer = await whole('/v1/messages', { model: 'sim', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.usage.output_tokens).toBeGreaterThan(0);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/messages', stream: false, inputTokens: answer.usage.input_tokens, outputTokens: answer.usage.output_tokens });
  });
});
