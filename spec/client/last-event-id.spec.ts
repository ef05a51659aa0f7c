import { connectSse } from '../../src/client';
import { createSseParser, sseDecode, type SseEvent } from '../../src/sse';
import { fromIterable } from '../../src/flow';
import { waitFor } from '../harness/net';
import { collect, scriptedServer, sseHead, within } from './helpers';

describe('last event ID from an id-only block (WHATWG HTML §9.2.6 dispatch, step 1)', () => {
  it('the parser reports the new last event ID even when no event is dispatched', () => {
    const ids: string[] = [];
    const events: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (e) => events.push(e), onLastEventId: (id) => ids.push(id) });
    parser.feed(new TextEncoder().encode('id: 7\n\ndata: a\n\nid: 8\ndata: b\n\n'));
    expect(events.map((e) => [e.data, e.lastEventId])).toEqual([
      ['a', '7'],
      ['b', '8'],
    ]);
    expect(ids).toEqual(['7', '8']); // once per change, at dispatch
  });

  it('sseDecode reports it in order with the events, only after earlier events were delivered', () => {
    const log: string[] = [];
    const bytes = new TextEncoder().encode('id: 1\ndata: a\n\nid: 2\n\n');
    const sub = fromIterable([bytes])
      .pipe(sseDecode({ onLastEventId: (id) => log.push(`id ${id}`) }))
      .subscribeWithDemand({ next: (e) => log.push(`event ${e.data}`) });
    expect(log).toEqual([]); // nothing requested yet: nothing parsed
    sub.request(1);
    expect(log).toEqual(['id 1', 'event a', 'id 2']);
  });

  it('connectSse resumes from an id-only block after the connection drops', async () => {
    const server = await scriptedServer((_req, res, index) => {
      sseHead(res);
      if (index === 0) {
        res.write('id: 41\ndata: first\n\nid: 42\n\n');
        setTimeout(() => res.destroy(), 20); // drop without a terminal event
      } else res.end('data: [DONE]\n\n');
    });
    try {
      const c = collect(connectSse(server.url, { initialDelayMs: 1, isTerminal: (e) => e.data === '[DONE]' }));
      await within(c.done, 5000);
      await waitFor(() => server.requests.length === 2);
      expect(server.requests[1].headers['last-event-id']).toBe('42');
      expect(c.events.map((e) => e.data)).toEqual(['first', '[DONE]']);
    } finally {
      await server.close();
    }
  });
});
