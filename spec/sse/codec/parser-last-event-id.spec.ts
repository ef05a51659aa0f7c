import { createSseParser, sseDecode, type SseEvent } from '../../../src/sse';
import { fromIterable } from '../../../src/flow';

describe('createSseParser lastEventId option', () => {
  it('starts the stream with the given last event ID, kept until an id field changes it', () => {
    const events: SseEvent[] = [];
    const ids: string[] = [];
    const parser = createSseParser({ lastEventId: '41', onEvent: (e) => events.push(e), onLastEventId: (id) => ids.push(id) });
    parser.feed('data: a\n\nid: 42\ndata: b\n\ndata: c\n\n');
    expect(events.map((e) => [e.data, e.lastEventId])).toEqual([
      ['a', '41'],
      ['b', '42'],
      ['c', '42'],
    ]);
    expect(ids).toEqual(['42']); // the starting ID is not a change
  });

  it('strips a BOM at stream start as without the option (no bytes are injected before it)', () => {
    const events: SseEvent[] = [];
    const parser = createSseParser({ lastEventId: 'x', onEvent: (e) => events.push(e) });
    parser.feed(Buffer.from([0xef, 0xbb]));
    parser.feed(Buffer.from([0xbf, ...Buffer.from('data: a\n\n')]));
    expect(events).toEqual([{ type: 'message', data: 'a', lastEventId: 'x' }]);
  });

  it('returns to the given last event ID on end() and reset()', () => {
    const events: SseEvent[] = [];
    const parser = createSseParser({ lastEventId: 's', onEvent: (e) => events.push(e) });
    parser.feed('id: 1\ndata: a\n\n');
    parser.end();
    parser.feed('data: b\n\n');
    parser.feed('id: 2\n\n');
    parser.reset();
    parser.feed('data: c\n\n');
    expect(events.map((e) => e.lastEventId)).toEqual(['1', 's', 's']);
  });

  it('rejects a starting ID with CR, LF or NUL', () => {
    for (const bad of ['a\nb', 'a\rb', 'a\0b']) expect(() => createSseParser({ lastEventId: bad, onEvent: () => undefined })).toThrow(TypeError);
  });

  it('sseDecode passes it to its parser', () => {
    const seen: string[] = [];
    fromIterable([Buffer.from('data: a\n\n')])
      .pipe(sseDecode({ lastEventId: '7' }))
      .subscribe((e) => seen.push(e.lastEventId));
    expect(seen).toEqual(['7']);
  });
});
