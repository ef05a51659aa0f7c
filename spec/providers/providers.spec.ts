import { BufferOverflowError, TimeoutError } from '../../src/errors';
import { fromIterable } from '../../src/flow/sources/iterable';
import type { SseEvent, SseEventInit } from '../../src/sse';
import { UpstreamStreamError } from '../../src/http/errors';
import { adaptProvider, anthropicAdapter, createPassthroughAdapter, openaiAdapter, type GatewayEvent } from '../../src/providers';

const ev = (data: string, type = 'message', lastEventId = ''): SseEvent => ({ type, data, lastEventId });

async function run(events: SseEvent[], adapter = openaiAdapter): Promise<{ out: GatewayEvent[]; error?: unknown }> {
  const out: GatewayEvent[] = [];
  return new Promise((resolve) => {
    fromIterable(events)
      .pipe(adaptProvider(adapter))
      .subscribeWithDemand({ next: (e) => out.push(e), error: (error) => resolve({ out, error }), complete: () => resolve({ out }) })
      .request(Infinity);
  });
}

describe('openaiAdapter', () => {
  const decode = openaiAdapter.decoder();

  it('decodes a content chunk into a delta and re-emits the frame as received', () => {
    const data = '{"choices":[{"index":0,"delta":{"content":"海"}}]}';
    expect(decode(ev(data))).toEqual({ type: 'delta', text: '海', wire: { data } });
  });

  it('decodes the usage chunk', () => {
    const e = decode(ev('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}'));
    expect(e).toMatchObject({ type: 'usage', usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 } });
  });

  it('decodes [DONE] as done and an error object as an UpstreamStreamError', () => {
    expect(decode(ev('[DONE]')).type).toBe('done');
    const e = decode(ev('{"error":{"message":"boom","type":"server_error","code":"x1"}}'));
    expect(e.type).toBe('error');
    expect(e.type === 'error' && e.error).toMatchObject({ message: 'boom', type: 'server_error', providerCode: 'x1', code: 'ERR_TIDEGATE_UPSTREAM_ERROR' });
  });

  it('formats tidegate errors as data: {"error":{message,type,code}}', () => {
    expect(JSON.parse((openaiAdapter.formatError(new TimeoutError('idle', 5)) as SseEventInit).data as string)).toEqual({
      error: { message: 'idle timeout after 5 ms', type: 'tidegate_error', code: 'ERR_TIDEGATE_TIMEOUT', param: null },
    });
    expect((openaiAdapter.formatError(new TimeoutError('idle', 5)) as SseEventInit).event).toBeUndefined();
  });
});

describe('anthropicAdapter', () => {
  const decode = anthropicAdapter.decoder();

  it('decodes text_delta, usage, message_stop and keeps the event name on the wire', () => {
    const delta = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}';
    expect(decode(ev(delta, 'content_block_delta'))).toEqual({ type: 'delta', text: 'hi', wire: { event: 'content_block_delta', data: delta } });
    expect(decode(ev('{"type":"message_delta","usage":{"output_tokens":7}}', 'message_delta'))).toMatchObject({ type: 'usage', usage: { outputTokens: 7 } });
    expect(decode(ev('{"type":"message_stop"}', 'message_stop')).type).toBe('done');
  });

  it('decodes event: error with the provider type and message', () => {
    const e = decode(ev('{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}', 'error'));
    expect(e.type === 'error' && e.error).toMatchObject({ type: 'overloaded_error', message: 'Overloaded' });
  });

  it('formats errors as event: error {"type":"error","error":{type,message}}', () => {
    const wire = anthropicAdapter.formatError(new UpstreamStreamError('Overloaded', 'overloaded_error'));
    expect(wire).toEqual({ event: 'error', data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' });
    expect(JSON.parse((anthropicAdapter.formatError(new BufferOverflowError()) as SseEventInit).data as string).error).toMatchObject({ type: 'overloaded_error', code: 'ERR_TIDEGATE_OVERFLOW' });
  });
});

describe('adaptProvider', () => {
  it('completes after the terminator', async () => {
    const { out, error } = await run([ev('{"choices":[{"delta":{"content":"a"}}]}'), ev('[DONE]')]);
    expect(error).toBeUndefined();
    expect(out.map((e) => e.type)).toEqual(['delta', 'done']);
  });

  it('signals ERR_TIDEGATE_UPSTREAM_TRUNCATED when the upstream ends without it', async () => {
    const { error } = await run([ev('{"choices":[{"delta":{"content":"a"}}]}')]);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED' });
  });

  it('signals the error frame instead of emitting it', async () => {
    const { out, error } = await run([ev('{"choices":[{"delta":{"content":"a"}}]}'), ev('{"error":{"message":"m"}}')]);
    expect(out).toHaveLength(1);
    expect(error).toBeInstanceOf(UpstreamStreamError);
  });

  it('completes a passthrough stream at EOF, keeping id and event names', async () => {
    const { out, error } = await run([ev('1', 'tick', 'a'), ev('2', 'tick', 'a')], createPassthroughAdapter());
    expect(error).toBeUndefined();
    expect(out.map((e) => e.wire)).toEqual([{ event: 'tick', id: 'a', data: '1' }, { event: 'tick', data: '2' }]);
  });

  it('treats EOF as truncation for a passthrough route with a terminator', async () => {
    const { error } = await run([ev('1')], createPassthroughAdapter({ data: '[DONE]' }));
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_TRUNCATED' });
  });
});
