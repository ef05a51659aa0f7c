import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { SIM_HEADERS, startTestGateway, type TestGateway } from '../gateway/helpers';

// The official SDKs read the same thing through relay: bytes as through relay: events,
// for a clean stream and for every fault the simulator can inject mid-stream.

let t: TestGateway;
const forwardHeaders = ['content-type', 'anthropic-version', ...SIM_HEADERS];

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 2000, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: ['bytes', 'events'].flatMap((relay) => [
      { path: `/${relay}/v1/chat/completions`, upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, policy: { relay } },
      { path: `/${relay}/v1/messages`, upstreamPath: '/v1/messages', provider: 'anthropic', forwardHeaders, policy: { relay } },
    ]),
  });
});
afterAll(() => t.close());

interface Outcome {
  text: string;
  usage?: unknown;
  error?: string;
}

async function viaOpenAI(relay: string, fault: string): Promise<Outcome> {
  const client = new OpenAI({ baseURL: `${t.gateway.url}/${relay}/v1`, apiKey: 'k', maxRetries: 0 });
  const out: Outcome = { text: '' };
  try {
    const stream = await client.chat.completions.create(
      { model: 'sim-zh', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': fault, 'x-sim-fault-after': '5' } },
    );
    for await (const chunk of stream) {
      out.text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) out.usage = chunk.usage;
    }
  } catch (err) {
    out.error = `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
  return out;
}

async function viaAnthropic(relay: string, fault: string): Promise<Outcome> {
  const client = new Anthropic({ baseURL: `${t.gateway.url}/${relay}`, apiKey: 'k', maxRetries: 0 });
  const out: Outcome = { text: '' };
  try {
    const stream = await client.messages.create(
      { model: 'sim-zh', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-sim-fault': fault, 'x-sim-fault-after': '5' } },
    );
    for await (const e of stream) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') out.text += e.delta.text;
      if (e.type === 'message_delta') out.usage = e.usage;
    }
  } catch (err) {
    out.error = `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
  return out;
}

/**
 * Equal outcomes. After a TCP reset, how much of what the upstream sent before it reaches the
 * client is a race on both relays (chunks parked in the IncomingMessage between one-chunk
 * requests are dropped when the socket errors), so there only the error and a common prefix count.
 */
function sameOutcome(bytes: Outcome, events: Outcome, fault: string): void {
  if (fault !== 'reset') return void expect(bytes).toEqual(events);
  expect(bytes.error).toEqual(events.error);
  const [short, long] = bytes.text.length <= events.text.length ? [bytes.text, events.text] : [events.text, bytes.text];
  expect(long.startsWith(short)).toBe(true);
}

describe('official SDKs through relay: bytes and relay: events', () => {
  it.each(['none', 'error-midstream', 'truncate', 'reset'])('openai SDK, fault %s: same text, usage and error on both relays', async (fault) => {
    const bytes = await viaOpenAI('bytes', fault);
    const events = await viaOpenAI('events', fault);
    sameOutcome(bytes, events, fault);
    if (fault === 'none') {
      expect(bytes.error).toBeUndefined();
      expect(bytes.text.length).toBeGreaterThan(0);
      expect(bytes.usage).toBeDefined();
    } else expect(bytes.error).toBeDefined();
  });

  it.each(['none', 'error-midstream', 'truncate', 'reset'])('anthropic SDK, fault %s: same text, usage and error on both relays', async (fault) => {
    const bytes = await viaAnthropic('bytes', fault);
    const events = await viaAnthropic('events', fault);
    sameOutcome(bytes, events, fault);
    if (fault === 'none') expect(bytes.error).toBeUndefined();
    else expect(bytes.error).toBeDefined();
  });

  it('logs the same outcome and token counts for both relays', async () => {
    const before = t.logs.streams().length;
    await viaOpenAI('bytes', 'none');
    await viaOpenAI('events', 'none');
    const [b, e] = t.logs.streams().slice(before);
    expect(b).toMatchObject({ outcome: 'completed' });
    expect({ outcome: b?.outcome, inputTokens: b?.inputTokens, outputTokens: b?.outputTokens }).toEqual({ outcome: e?.outcome, inputTokens: e?.inputTokens, outputTokens: e?.outputTokens });
    expect(b?.outputTokens).toBeGreaterThan(0);
  });
});
