import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSimulator, type Simulator } from '../../src/simulator';
import { CaptureTransport } from '../gateway/helpers';

// The calls the official SDKs make besides chat, through the gateway's default routes against
// the simulator: each answer equals the simulator's own.

let sim: Simulator;
let gateway: RunningGateway;
const logs = new CaptureTransport();

beforeAll(async () => {
  sim = createSimulator({ tokensPerSecond: 2000, ttftMs: 1 });
  const { url } = await sim.listen(0, '127.0.0.1');
  gateway = await startGateway(parseConfig({ port: 0, upstream: { url, apiKey: 'sk-upstream-key-0001' } }), { logger: createLogger({ transports: [logs] }) });
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const viaGateway = (): OpenAI => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
const direct = (): OpenAI => new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'x', maxRetries: 0 });

describe('OpenAI SDK JSON routes through the gateway', () => {
  it('models.list() lists the simulator’s models', async () => {
    const ids = [];
    for await (const m of viaGateway().models.list()) ids.push(m.id);
    const expected = [];
    for await (const m of direct().models.list()) expected.push(m.id);
    expect(ids).toEqual(expected);
    expect(ids).toContain('sim-basic');
  });

  it('models.retrieve() returns the simulator’s model, and NotFoundError for an unknown one', async () => {
    const got = await viaGateway().models.retrieve('sim-basic');
    expect(got).toEqual(await direct().models.retrieve('sim-basic'));
    expect(got).toMatchObject({ id: 'sim-basic', object: 'model' });
    const err = await viaGateway()
      .models.retrieve('no-such-model')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toContain("The model 'no-such-model' does not exist");
  });

  it('embeddings.create() returns the simulator’s vectors (base64 as the SDK asks, decoded)', async () => {
    const input = ['tides', 'backpressure'];
    const got = await viaGateway().embeddings.create({ model: 'sim-embedding', input });
    const want = await direct().embeddings.create({ model: 'sim-embedding', input });
    expect(got.data.map((d) => d.embedding)).toEqual(want.data.map((d) => d.embedding));
    expect(got.data).toHaveLength(2);
    expect(got.data[0].embedding).toHaveLength(8);
    expect(got.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('completions.create({stream: true}) (legacy) streams the transcript and ends on [DONE]', async () => {
    const stream = await viaGateway().completions.create({ model: 'sim-basic', prompt: 'weather?', stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    const whole = await direct().completions.create({ model: 'sim-basic', prompt: 'weather?' });
    expect(text).toBe(whole.choices[0].text);
    expect(text.startsWith("I'm unable to provide real-time weather")).toBe(true);
    expect(usage).toMatchObject({ completion_tokens: 30 });
    const line = logs.streams().find((l) => l.route === '/v1/completions');
    expect(line).toMatchObject({ outcome: 'completed', outputTokens: 30 });
    expect(typeof line?.ttftMs).toBe('number');
  });

  it('a legacy completions error mid-stream is raised by the SDK', async () => {
    sim.configure({ fault: 'error-midstream', faultAfterTokens: 3 });
    try {
      const stream = await viaGateway().completions.create({ model: 'sim-basic', prompt: 'x', stream: true });
      let text = '';
      const err = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as Error).message).toContain('The server had an error while processing your request');
      expect(text).toBe("I'm unable to");
    } finally {
      sim.configure({ fault: 'none' });
    }
  });
});

describe('Anthropic SDK JSON routes through the gateway', () => {
  it('messages.countTokens() returns the simulator’s count', async () => {
    const body = { model: 'sim-claude', messages: [{ role: 'user' as const, content: 'How high is the tide today?' }] };
    const got = await new Anthropic({ baseURL: gateway.url, apiKey: 'client-key', maxRetries: 0 }).messages.countTokens(body);
    const want = await new Anthropic({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 }).messages.countTokens(body);
    expect(got).toEqual(want);
    expect(got.input_tokens).toBeGreaterThan(0);
  });
});
