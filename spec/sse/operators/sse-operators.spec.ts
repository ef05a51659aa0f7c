import { createFlow, fromIterable, SseLimitError, sseDecode, sseEncode, type Flow, type SseEvent } from '../../../src';
import { bytes } from '../helpers';

interface Recorded<T> {
  values: T[];
  errors: unknown[];
  completed: boolean;
}

function record<T>(flow: Flow<T>) {
  const r: Recorded<T> = { values: [], errors: [], completed: false };
  const sub = flow.subscribeWithDemand({
    next: (v) => r.values.push(v),
    error: (e) => r.errors.push(e),
    complete: () => (r.completed = true),
  });
  return { r, sub };
}

/** A byte source that logs every request and emits only when told. */
function manualSource() {
  const requests: number[] = [];
  let cancelled = 0;
  let sink: import('../../../src').FlowSink<Uint8Array> | undefined;
  const flow = createFlow<Uint8Array>((s) => {
    sink = s;
    s.onRequest((n) => requests.push(n));
    s.onCancel(() => cancelled++);
  });
  return {
    flow,
    requests,
    cancelled: () => cancelled,
    emit: (text: string) => sink!.next(bytes(text)),
    complete: () => sink!.complete(),
    error: (e: unknown) => sink!.error(e),
  };
}

const msg = (data: string): SseEvent => ({ type: 'message', data, lastEventId: '' });

describe('sseDecode', () => {
  it('decodes events split across chunks', () => {
    const { r, sub } = record(fromIterable(['data: a\n\nda', 'ta: b\n', '\n'].map(bytes)).pipe(sseDecode()));
    sub.request(Infinity);
    expect(r.values).toEqual([msg('a'), msg('b')]);
    expect(r.completed).toBe(true);
  });

  it('requests nothing upstream before downstream demand', () => {
    const src = manualSource();
    record(src.flow.pipe(sseDecode()));
    expect(src.requests).toEqual([]);
  });

  it('requests one chunk at a time while downstream demand is unmet', () => {
    const src = manualSource();
    const { r, sub } = record(src.flow.pipe(sseDecode()));
    sub.request(2);
    expect(src.requests).toEqual([1]);
    src.emit('data: a'); // no event yet: ask for the next chunk
    expect(src.requests).toEqual([1, 1]);
    src.emit('\n\n');
    expect(r.values).toEqual([msg('a')]);
    expect(src.requests).toEqual([1, 1, 1]);
    src.emit('data: b\n\n');
    expect(r.values).toEqual([msg('a'), msg('b')]);
    expect(src.requests).toEqual([1, 1, 1]); // demand met: nothing more requested
  });

  it('queues events beyond demand and serves them before requesting more bytes', () => {
    const src = manualSource();
    const { r, sub } = record(src.flow.pipe(sseDecode()));
    sub.request(1);
    src.emit('data: a\n\ndata: b\n\ndata: c\n\n');
    expect(r.values).toEqual([msg('a')]);
    sub.request(2);
    expect(r.values).toEqual([msg('a'), msg('b'), msg('c')]);
    expect(src.requests).toEqual([1]);
    sub.request(1);
    expect(src.requests).toEqual([1, 1]);
  });

  it('requests unbounded upstream when downstream demand is unbounded', () => {
    const src = manualSource();
    const { sub } = record(src.flow.pipe(sseDecode()));
    sub.request(Infinity);
    expect(src.requests).toEqual([Infinity]);
  });

  it('completes only after queued events were delivered, dropping an unterminated last event', () => {
    const src = manualSource();
    const { r, sub } = record(src.flow.pipe(sseDecode()));
    sub.request(1);
    src.emit('data: a\n\ndata: b\n\ndata: unterminated\n');
    src.complete();
    expect(r.completed).toBe(false);
    sub.request(5);
    expect(r.values).toEqual([msg('a'), msg('b')]);
    expect(r.completed).toBe(true);
  });

  it('cancels upstream and signals SseLimitError when a limit is exceeded', () => {
    const src = manualSource();
    const { r, sub } = record(src.flow.pipe(sseDecode({ maxLineBytes: 16 })));
    sub.request(10);
    src.emit('data: ok\n\ndata: this line is far too long\n\n');
    expect(src.cancelled()).toBe(1);
    expect(r.values).toEqual([msg('ok')]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toBeInstanceOf(SseLimitError);
    expect(r.errors[0]).toMatchObject({ code: 'ERR_TIDEGATE_SSE_LIMIT', limit: 'line' });
  });

  it('delivers an upstream error after the queued events', () => {
    const src = manualSource();
    const { r, sub } = record(src.flow.pipe(sseDecode()));
    sub.request(1);
    src.emit('data: a\n\ndata: b\n\n');
    src.error(new Error('boom'));
    expect(r.errors).toEqual([]);
    sub.request(1);
    expect(r.values).toEqual([msg('a'), msg('b')]);
    expect(r.errors).toEqual([new Error('boom')]);
  });

  it('discards queued events and cancels upstream on cancel', () => {
    const discarded: unknown[] = [];
    const src = manualSource();
    const flow = src.flow.pipe(sseDecode());
    let subscription: import('../../../src').Subscription | undefined;
    flow.subscribeWith(
      {
        onSubscribe: (s) => {
          subscription = s;
          s.request(1);
        },
        onNext: () => undefined,
        onError: () => undefined,
        onComplete: () => undefined,
      },
      { onDiscard: (v) => discarded.push(v) },
    );
    src.emit('data: a\n\ndata: b\n\n');
    subscription!.cancel();
    expect(src.cancelled()).toBe(1);
    expect(discarded).toEqual([msg('b')]);
  });

  it('passes retry and comment fields to the callbacks', () => {
    const retries: number[] = [];
    const comments: string[] = [];
    const { sub } = record(
      fromIterable([bytes(': hi\nretry: 5\n\n')]).pipe(sseDecode({ onRetry: (ms) => retries.push(ms), onComment: (c) => comments.push(c) })),
    );
    sub.request(1);
    expect(retries).toEqual([5]);
    expect(comments).toEqual(['hi']);
  });

  it('never emits more than requested for a synchronous source', () => {
    const chunks = Array.from({ length: 50 }, (_, i) => bytes(`data: ${i}\n\n`));
    const { r, sub } = record(fromIterable(chunks).pipe(sseDecode()));
    sub.request(7);
    expect(r.values).toHaveLength(7);
    sub.request(100);
    expect(r.values).toHaveLength(50);
    expect(r.completed).toBe(true);
  });
});

describe('sseEncode', () => {
  it('encodes each event to one Buffer', () => {
    const { r, sub } = record(fromIterable([{ data: 'a' }, { event: 'x', data: 'b\nc' }]).pipe(sseEncode()));
    sub.request(Infinity);
    expect(r.values.map((b) => b.toString('utf8'))).toEqual(['data: a\n\n', 'event: x\ndata: b\ndata: c\n\n']);
    expect(r.values.every((b) => Buffer.isBuffer(b))).toBe(true);
    expect(r.completed).toBe(true);
  });

  it('passes demand through 1:1', () => {
    const requests: number[] = [];
    const flow = createFlow<{ data: string }>((s) => {
      s.onRequest((n) => requests.push(n));
    });
    const { sub } = record(flow.pipe(sseEncode()));
    sub.request(3);
    expect(requests).toEqual([3]);
  });

  it('cancels upstream and signals the TypeError of an injecting event', () => {
    let cancelled = false;
    const flow = createFlow<{ event?: string; data: string }>((s) => {
      s.onCancel(() => (cancelled = true));
      s.onRequest(() => {
        s.next({ data: 'ok' });
        s.next({ event: 'x\ndata: injected', data: 'y' });
      });
    });
    const { r, sub } = record(flow.pipe(sseEncode()));
    sub.request(2);
    expect(r.values.map(String)).toEqual(['data: ok\n\n']);
    expect(r.errors[0]).toBeInstanceOf(TypeError);
    expect(cancelled).toBe(true);
  });

  it('round-trips through sseDecode', () => {
    const events = [{ id: '1', event: 'a', data: 'x\r\ny' }, { data: '日本😀' }];
    const { r, sub } = record(fromIterable(events).pipe(sseEncode(), sseDecode()));
    sub.request(Infinity);
    expect(r.values).toEqual([
      { type: 'a', data: 'x\ny', lastEventId: '1' },
      { type: 'message', data: '日本😀', lastEventId: '1' },
    ]);
  });
});
