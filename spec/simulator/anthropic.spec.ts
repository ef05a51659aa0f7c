import Anthropic from '@anthropic-ai/sdk';
import { BUILTIN_TRANSCRIPTS, createSimulator, Simulator, transcriptText } from '../../src/simulator';
import { dataLines, eventNames, postRaw } from './helpers';

const ZH = transcriptText(BUILTIN_TRANSCRIPTS['sim-zh']);

describe('simulator: Anthropic messages', () => {
  let sim: Simulator;
  let client: Anthropic;
  let url: string;

  beforeEach(async () => {
    sim = createSimulator({ tokensPerSecond: 1000, ttftMs: 10 });
    url = (await sim.listen()).url;
    client = new Anthropic({ baseURL: url, apiKey: 'sk-ant-test', maxRetries: 0 });
  });

  afterEach(async () => {
    await sim.close();
  });

  it('streams the CJK + emoji transcript byte for byte to the official SDK', async () => {
    const stream = await client.messages.create({
      model: 'sim-zh',
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    for await (const ev of stream) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    expect(Buffer.from(text, 'utf8').equals(Buffer.from(ZH, 'utf8'))).toBe(true);
  });

  it('assembles a final message with the SDK MessageStream helper', async () => {
    const final = await client.messages
      .stream({ model: 'sim-zh-split', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(final.content).toHaveLength(1);
    expect(final.content[0]).toMatchObject({ type: 'text', text: ZH });
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(BUILTIN_TRANSCRIPTS['sim-zh'].tokens.length);
  });

  it('sends the Messages events in the documented order, each with event: and data:', async () => {
    const res = await postRaw(url, '/v1/messages', { model: 'sim-basic', max_tokens: 100, stream: true, messages: [] });
    const n = BUILTIN_TRANSCRIPTS['sim-basic'].tokens.length;
    expect(eventNames(res.body)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(n).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const data = dataLines(res.body);
    expect(data).toHaveLength(n + 6);
    expect(JSON.parse(data[data.length - 2])).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: n },
    });
  });

  it('stops with max_tokens when the request caps the answer', async () => {
    const stream = client.messages.stream({ model: 'sim-basic', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('max_tokens');
    expect(await stream.finalText()).toBe("I'm unable");
  });

  it('returns a Message JSON when stream is absent', async () => {
    const msg = await client.messages.create({ model: 'sim-zh', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] });
    expect(msg.type).toBe('message');
    expect(msg.content[0]).toMatchObject({ type: 'text', text: ZH });
    expect(msg.stop_reason).toBe('end_turn');
  });
});
