/**
 * The frame adapter's `onEvent` closure is made once per stream, outside the per-frame
 * step (src/providers/adapt.ts). Streams adapted in parallel through ONE
 * operator must share nothing; several events per frame, `done` mid-frame, usage in the last
 * frame and errors must still be seen.
 */
import { SseFrame } from '../../src/sse';
import { UpstreamStreamError, UpstreamTruncatedError } from '../../src/http/errors';
import { adaptFrames, anthropicAdapter, openaiAdapter, type GatewayEvent } from '../../src/providers';
import { TestPublisher, record, type Recorder } from '../flow/operators/test-publisher';

const frame = (text: string): SseFrame => new SseFrame(Buffer.from(text));
const chunk = (content: string): string => `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`;
const usage = (p: number, c: number): string => `data: {"id":"c1","choices":[],"usage":{"prompt_tokens":${p},"completion_tokens":${c},"total_tokens":${p + c}}}\n\n`;
const DONE = 'data: [DONE]\n\n';
const bytesOf = (out: GatewayEvent[]): string => out.map((e) => (e.wire instanceof SseFrame ? e.wire.bytes.toString() : '')).join('');

describe('adaptFrames, nothing shared between streams', () => {
  it('two streams through one operator, frames interleaved one by one: each sees only its own events, usage and end', () => {
    const op = adaptFrames(openaiAdapter);
    const a = new TestPublisher<SseFrame>();
    const b = new TestPublisher<SseFrame>();
    const ra: Recorder<GatewayEvent> = record(a.flow.pipe(op));
    const rb: Recorder<GatewayEvent> = record(b.flow.pipe(op));
    ra.sub.request(Infinity);
    rb.sub.request(Infinity);
    // A: text, then usage + DONE (and bytes after it) in its last frame. B: a comment and usage
    // before its text, several events in one frame, then usage and DONE in separate frames.
    a.next(frame(chunk('a1') + chunk('a2')));
    b.next(frame(': hello\n\n' + usage(1, 0)));
    a.next(frame(chunk('a3')));
    b.next(frame(chunk('b1') + chunk('b2') + chunk('b3')));
    a.next(frame(usage(10, 20) + DONE + chunk('after-done')));
    b.next(frame(chunk('b4')));
    b.next(frame(usage(7, 9)));
    b.next(frame(DONE));
    expect(ra.errors).toEqual([]);
    expect(rb.errors).toEqual([]);
    expect(ra.completed).toBe(1);
    expect(rb.completed).toBe(1);
    expect(bytesOf(ra.values)).toBe(chunk('a1') + chunk('a2') + chunk('a3') + usage(10, 20) + DONE);
    expect(bytesOf(rb.values)).toBe(': hello\n\n' + usage(1, 0) + chunk('b1') + chunk('b2') + chunk('b3') + chunk('b4') + usage(7, 9) + DONE);
    const usages = (r: Recorder<GatewayEvent>): unknown[] => r.values.map((e) => (e.type === 'frames' ? e.usage : undefined)).filter((u) => u !== undefined);
    expect(usages(ra)).toEqual([{ inputTokens: 10, outputTokens: 20, totalTokens: 30 }]);
    expect(usages(rb)).toEqual([{ inputTokens: 1, outputTokens: 0, totalTokens: 1 }, { inputTokens: 7, outputTokens: 9, totalTokens: 16 }]);
  });

  it('an error in one stream ends only that stream; the other, mid-frame, goes on to its DONE', () => {
    const op = adaptFrames(openaiAdapter);
    const a = new TestPublisher<SseFrame>();
    const b = new TestPublisher<SseFrame>();
    const ra = record(a.flow.pipe(op));
    const rb = record(b.flow.pipe(op));
    ra.sub.request(Infinity);
    rb.sub.request(Infinity);
    a.next(frame(chunk('a')));
    b.next(frame(chunk('b')));
    a.next(frame(chunk('x') + 'data: {"error":{"message":"boom"}}\n\n' + chunk('y')));
    b.next(frame(chunk('c') + DONE));
    expect(ra.errors[0]).toBeInstanceOf(UpstreamStreamError);
    expect(bytesOf(ra.values)).toBe(chunk('a') + chunk('x'));
    expect(rb.errors).toEqual([]);
    expect(rb.completed).toBe(1);
    expect(bytesOf(rb.values)).toBe(chunk('b') + chunk('c') + DONE);
  });

  it('a stream that completes without DONE is truncated; its parallel twin with DONE is not', () => {
    const op = adaptFrames(openaiAdapter);
    const a = new TestPublisher<SseFrame>();
    const b = new TestPublisher<SseFrame>();
    const ra = record(a.flow.pipe(op));
    const rb = record(b.flow.pipe(op));
    ra.sub.request(Infinity);
    rb.sub.request(Infinity);
    a.next(frame(chunk('a')));
    b.next(frame(chunk('b') + DONE));
    a.complete();
    expect(ra.errors[0]).toBeInstanceOf(UpstreamTruncatedError);
    expect(rb.errors).toEqual([]);
    expect(rb.completed).toBe(1);
  });

  it('an event whose lines are cut across two frames before the first text is decoded whole (the parser keeps its line)', () => {
    const op = adaptFrames(openaiAdapter);
    const a = new TestPublisher<SseFrame>();
    const ra = record(a.flow.pipe(op));
    ra.sub.request(Infinity);
    const whole = chunk('split');
    a.next(frame(whole.slice(0, 25)));
    a.next(frame(whole.slice(25) + DONE));
    expect(ra.errors).toEqual([]);
    expect(ra.completed).toBe(1);
    expect(bytesOf(ra.values)).toBe(whole + DONE);
    expect(ra.values.map((e) => e.type === 'frames' && e.delta)).toEqual([false, true]);
  });

  it('Anthropic: usage from message_delta in the last frame, with message_stop, per stream', () => {
    const op = adaptFrames(anthropicAdapter);
    const text = (t: string): string =>
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}}\n\n' +
      `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${t}"}}\n\n`;
    const tail = (out: number): string => `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":${out}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
    const a = new TestPublisher<SseFrame>();
    const b = new TestPublisher<SseFrame>();
    const ra = record(a.flow.pipe(op));
    const rb = record(b.flow.pipe(op));
    ra.sub.request(Infinity);
    rb.sub.request(Infinity);
    a.next(frame(text('x')));
    b.next(frame(text('y')));
    b.next(frame(tail(33)));
    a.next(frame(tail(11)));
    expect(ra.completed).toBe(1);
    expect(rb.completed).toBe(1);
    const last = (r: Recorder<GatewayEvent>): GatewayEvent | undefined => r.values[r.values.length - 1];
    expect(last(ra)).toMatchObject({ type: 'frames', usage: { outputTokens: 11 } });
    expect(last(rb)).toMatchObject({ type: 'frames', usage: { outputTokens: 33 } });
  });
});
