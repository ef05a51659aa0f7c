import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import OpenAI from 'openai';
import { ZH_EMOJI_TOKENS } from '../../src/simulator/transcripts';
import { SIM_HEADERS, startTestGateway, type TestGateway } from '../gateway/helpers';

// The Responses API through the gateway, read by the official clients: the same text as the
// simulator's direct answer, upstream errors raised by the SDK, the upstream cancelled on abort.

let t: TestGateway;
const forwardHeaders = ['content-type', ...SIM_HEADERS];

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 2000, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/responses', provider: 'openai', forwardHeaders },
      { path: '/events/v1/responses', upstreamPath: '/v1/responses', provider: 'openai', forwardHeaders, policy: { relay: 'events' } },
    ],
  });
});
afterAll(() => t.close());

const client = (prefix = ''): OpenAI => new OpenAI({ baseURL: `${t.gateway.url}${prefix}/v1`, apiKey: 'k', maxRetries: 0 });
const direct = (): OpenAI => new OpenAI({ baseURL: `${t.sim.url}/v1`, apiKey: 'k', maxRetries: 0 });

async function directText(model: string): Promise<string> {
  return (await direct().responses.create({ model, input: 'hi' })).output_text;
}

describe('Responses API through the gateway (openai SDK)', () => {
  it.each(['', '/events'])('responses.create({stream: true}) yields the direct answer’s text (%s)', async (prefix) => {
    const stream = await client(prefix).responses.create({ model: 'sim-zh', input: 'hi', stream: true });
    let text = '';
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(text).toBe(await directText('sim-zh'));
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    const route = `${prefix}/v1/responses`;
    const line = t.logs.streams().filter((l) => l.route === route).at(-1);
    expect(line).toMatchObject({ outcome: 'completed', outputTokens: ZH_EMOJI_TOKENS.length });
    expect(typeof line?.inputTokens).toBe('number');
    expect(typeof line?.ttftMs).toBe('number');
  });

  it('responses.stream() resolves the final response with the direct text and usage', async () => {
    const stream = client().responses.stream({ model: 'sim-responses', input: 'hi' });
    let deltas = '';
    stream.on('response.output_text.delta', (e) => (deltas += e.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Hello! How can I assist you today?');
    expect(final.output_text).toBe(await directText('sim-responses'));
    expect(deltas).toBe(final.output_text);
    expect(final.usage?.output_tokens).toBe(9);
  });

  it('a non-stream responses.create() is relayed whole', async () => {
    const r = await client().responses.create({ model: 'sim-responses', input: 'hi' });
    expect(r.output_text).toBe('Hello! How can I assist you today?');
    expect(r.status).toBe('completed');
  });

  it.each(['', '/events'])('an upstream error mid-stream is raised by the SDK (%s)', async (prefix) => {
    const stream = await client(prefix).responses.create({ model: 'sim-responses', input: 'hi', stream: true }, { headers: { 'x-sim-fault': 'error-midstream', 'x-sim-fault-after': '3' } });
    let text = '';
    const err = await (async () => {
      for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    })().catch((e: unknown) => e);
    expect(text).toBe('Hello! How');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toContain('You exceeded your current quota');
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_error', errorCode: 'ERR_TIDEGATE_UPSTREAM_ERROR' });
  });

  it('responses.stream() raises an upstream error mid-stream', async () => {
    const stream = client().responses.stream({ model: 'sim-responses', input: 'hi' }, { headers: { 'x-sim-fault': 'error-midstream', 'x-sim-fault-after': '2' } });
    const err = await stream.finalResponse().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toContain('You exceeded your current quota');
  });

  it('writes errors after the first byte as an error event then response.failed, numbered on', async () => {
    const res = await fetch(`${t.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': 'truncate', 'x-sim-fault-after': '2' },
      body: JSON.stringify({ model: 'sim-responses', input: 'hi', stream: true }),
    });
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    const events = text
      .trim()
      .split('\n\n')
      .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown> }));
    const [error, failed] = events.slice(-2);
    const before = events.at(-3)?.data.sequence_number as number;
    expect(error.event).toBe('error');
    expect(error.data).toMatchObject({ type: 'error', sequence_number: before + 1, code: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED', error: { code: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED' } });
    expect(failed.event).toBe('response.failed');
    expect(failed.data).toMatchObject({ type: 'response.failed', sequence_number: before + 2, response: { status: 'failed', error: { code: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED', message: expect.any(String) } } });
    expect((failed.data.response as { id: string }).id).toBe((events[0].data.response as { id: string }).id);
  });

  it('an upstream that closes without a terminal event is raised by the SDK as a truncation', async () => {
    const stream = await client().responses.create({ model: 'sim-responses', input: 'hi', stream: true }, { headers: { 'x-sim-fault': 'truncate', 'x-sim-fault-after': '4' } });
    const err = await (async () => {
      for await (const _event of stream) void _event;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(t.logs.streams().at(-1)).toMatchObject({ outcome: 'upstream_reset', errorCode: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED' });
  });

  it('aborting the SDK stream cancels the upstream request', async () => {
    const stream = await client().responses.create({ model: 'sim', input: 'hi', stream: true }, { headers: { 'x-sim-tokens-per-second': '40' } });
    let deltas = 0;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta' && ++deltas === 2) stream.controller.abort();
    }
    const deadline = Date.now() + 5000;
    let record = t.sim.requests.at(-1);
    while (record?.outcome === 'active' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      record = t.sim.requests.at(-1);
    }
    expect(record).toMatchObject({ outcome: 'aborted' });
    expect(record?.tokensWritten).toBeLessThan(100);
  });
});

describe('Responses API through the gateway (Vercel AI SDK)', () => {
  it('the default openai(…) provider streams the direct answer with streamText', async () => {
    // `ai` and `@ai-sdk/openai` are ESM: run them in a child node process.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-ai-sdk-'));
    const script = path.join(dir, 'stream-text.mjs');
    const resolveFrom = (id: string): string => require.resolve(id, { paths: [process.cwd()] });
    fs.writeFileSync(
      script,
      `import { streamText } from ${JSON.stringify(pathToUrl(resolveFrom('ai')))};
import { createOpenAI } from ${JSON.stringify(pathToUrl(resolveFrom('@ai-sdk/openai')))};
const openai = createOpenAI({ baseURL: process.argv[2], apiKey: 'k' });
const result = streamText({ model: openai('sim-zh'), prompt: 'hi', maxRetries: 0 });
let text = '';
for await (const part of result.textStream) text += part;
process.stdout.write(JSON.stringify({ text, usage: await result.usage }));
`,
    );
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [script, `${t.gateway.url}/v1`], { timeout: 20_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
    );
    fs.rmSync(dir, { recursive: true, force: true });
    const got = JSON.parse(out) as { text: string; usage: { outputTokens?: number } };
    expect(got.text).toBe(await directText('sim-zh'));
    expect(got.usage.outputTokens).toBe(ZH_EMOJI_TOKENS.length);
    expect(t.logs.streams().at(-1)).toMatchObject({ route: '/v1/responses', outcome: 'completed' });
  });
});

function pathToUrl(file: string): string {
  return `file://${file}`;
}
