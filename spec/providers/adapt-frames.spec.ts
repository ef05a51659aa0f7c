import { UpstreamStreamError, UpstreamTruncatedError } from '../../src/http/errors';
import { fromIterable } from '../../src/flow/sources/iterable';
import { SseFrame } from '../../src/sse';
import { adaptFrames, anthropicAdapter, createPassthroughAdapter, openaiAdapter, type GatewayEvent, type ProviderAdapter } from '../../src/providers';

const frame = (text: string): SseFrame => new SseFrame(Buffer.from(text));
const chunk = (content: string): string => `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`;

async function run(frames: SseFrame[], adapter: ProviderAdapter = openaiAdapter): Promise<{ out: GatewayEvent[]; error?: unknown }> {
  const out: GatewayEvent[] = [];
  return new Promise((resolve) => {
    fromIterable(frames)
      .pipe(adaptFrames(adapter))
      .subscribeWithDemand({ next: (e) => out.push(e), error: (error) => resolve({ out, error }), complete: () => resolve({ out }) })
      .request(Infinity);
  });
}

const bytesOf = (out: GatewayEvent[]): string => out.map((e) => (e.wire instanceof SseFrame ? e.wire.bytes.toString() : '')).join('');

describe('adaptFrames', () => {
  it('relays every frame as its own bytes, flagging the first one with text', async () => {
    const input = [frame(chunk('') + chunk('Hi')), frame(chunk(' there')), frame('data: [DONE]\n\n')];
    const { out, error } = await run(input);
    expect(error).toBeUndefined();
    expect(bytesOf(out)).toBe(input.map((f) => f.bytes.toString()).join(''));
    expect(out.map((e) => e.type === 'frames' && e.delta)).toEqual([true, false, false]);
  });

  it('passes the same SseFrame on, undecoded, once text was seen and the adapter needs nothing from it', async () => {
    const plain = frame(chunk('b') + chunk('c'));
    const { out } = await run([frame(chunk('a')), plain, frame('data: [DONE]\n\n')]);
    expect(out[1]?.wire).toBe(plain);
  });

  it('cuts a frame after the terminator and completes: nothing after [DONE] is relayed', async () => {
    const { out, error } = await run([frame(chunk('a') + 'data: [DONE]\n\n' + chunk('late')), frame(chunk('later'))]);
    expect(error).toBeUndefined();
    expect(bytesOf(out)).toBe(chunk('a') + 'data: [DONE]\n\n');
  });

  it('relays the blocks before an error event, then signals the error (not relayed)', async () => {
    const err = 'data: {"error":{"message":"boom","type":"server_error","code":null}}\n\n';
    const { out, error } = await run([frame(chunk('a') + chunk('b') + err + chunk('c'))]);
    expect(bytesOf(out)).toBe(chunk('a') + chunk('b'));
    expect(error).toBeInstanceOf(UpstreamStreamError);
    expect((error as UpstreamStreamError).message).toBe('boom');
  });

  it('signals an error event that opens a frame without emitting an empty frame', async () => {
    const { out, error } = await run([frame(chunk('a')), frame('data: {"error":{"message":"x"}}\n\n')]);
    expect(out).toHaveLength(1);
    expect(error).toBeInstanceOf(UpstreamStreamError);
  });

  it('reports usage found in a frame', async () => {
    const usage = 'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}\n\n';
    const { out } = await run([frame(chunk('a')), frame(chunk('b') + usage + 'data: [DONE]\n\n')]);
    expect(out[1]).toMatchObject({ type: 'frames', usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 } });
  });

  it('reports usage whose key is spelt with a JSON escape ("\\u0075sage" is "usage")', async () => {
    const usage = 'data: {"id":"c1","choices":[],"\\u0075sage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}\n\n';
    const { out } = await run([frame(chunk('a')), frame(chunk('b') + usage), frame('data: [DONE]\n\n')]);
    expect(out[1]).toMatchObject({ type: 'frames', usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 } });
  });

  it('signals an error event whose key is spelt with a JSON escape, not relaying it', async () => {
    const err = 'data: {"\\u0065rror":{"message":"boom","type":"server_error","code":null}}\n\n';
    const { out, error } = await run([frame(chunk('a')), frame(chunk('b') + err)]);
    expect(bytesOf(out)).toBe(chunk('a') + chunk('b'));
    expect(error).toBeInstanceOf(UpstreamStreamError);
  });

  it('passes over frames whose only escapes are of non-ASCII text (CJK as \\u4f60)', async () => {
    const cjk = frame('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\\u4f60\\u597d \\u001b"},"finish_reason":null}]}\n\n');
    const { out } = await run([frame(chunk('a')), cjk, frame('data: [DONE]\n\n')]);
    expect(out[1]?.wire).toBe(cjk);
  });

  it('keeps the upstream bytes of a decoded frame exactly: comments, ids and field order', async () => {
    const text = ': keepalive\nid: 7\ndata: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n';
    const { out } = await run([frame(text), frame('data: [DONE]\n\n')]);
    expect(bytesOf(out)).toBe(text + 'data: [DONE]\n\n');
  });

  it('signals ERR_TIDEGATE_UPSTREAM_TRUNCATED when the frames end without the terminator', async () => {
    const { error } = await run([frame(chunk('a'))]);
    expect(error).toBeInstanceOf(UpstreamTruncatedError);
  });

  it('ends an Anthropic stream at message_stop and reports its usage', async () => {
    const text =
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\nevent: ping\ndata: {}\n\n';
    const { out, error } = await run([frame(text)], anthropicAdapter);
    expect(error).toBeUndefined();
    expect(bytesOf(out)).toBe(text.slice(0, text.indexOf('event: ping')));
    expect(out[0]).toMatchObject({ delta: true, usage: { inputTokens: 4 } });
  });

  it("ends an Anthropic stream at a data-only message_stop whose type is spelt with a JSON escape", async () => {
    const delta = 'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n';
    const stop = 'data: {"type":"m\\u0065ssage_stop"}\n\n';
    const { out, error } = await run([frame(delta), frame(delta + stop + delta)], anthropicAdapter);
    expect(error).toBeUndefined();
    expect(bytesOf(out)).toBe(delta + delta + stop);
  });

  it('finds a passthrough terminator inside a frame', async () => {
    const adapter = createPassthroughAdapter({ event: 'done' });
    const { out, error } = await run([frame('data: a\n\nevent: done\ndata: x\n\ndata: after\n\n')], adapter);
    expect(error).toBeUndefined();
    expect(bytesOf(out)).toBe('data: a\n\nevent: done\ndata: x\n\n');
  });

  it('emits one frame per frame of demand', () => {
    const frames = [frame(chunk('a')), frame(chunk('b')), frame(chunk('c')), frame('data: [DONE]\n\n')];
    const out: GatewayEvent[] = [];
    const subscription = fromIterable(frames).pipe(adaptFrames(openaiAdapter)).subscribeWithDemand({ next: (e) => out.push(e) });
    const delivered: number[] = [];
    subscription.request(2);
    delivered.push(out.length);
    subscription.request(1);
    delivered.push(out.length);
    expect(delivered).toEqual([2, 3]);
  });
});
