import { filter as rxFilter, map as rxMap } from 'rxjs';
import { connectSse, filter, map } from '../../src';
import type { FlowSubscription } from '../../src/flow/types';
import type { SseEvent } from '../../src/sse';
import { scriptedServer, sseHead, within, type ScriptedServer } from './helpers';

// The consumption styles of docs/client.md, run against a local OpenAI-style stream.

let server: ScriptedServer;
beforeAll(async () => {
  server = await scriptedServer((_req, res) => {
    sseHead(res);
    const chunk = (t: string): string => `data: ${JSON.stringify({ choices: [{ delta: { content: t } }] })}\n\n`;
    res.end(`${chunk('Hel')}: ping\n\n${chunk('lo')}data: [DONE]\n\n`);
  });
});
afterAll(() => server.close());

describe('docs/client.md examples', () => {
  it('consumes with subscribeWithDemand, one event at a time', async () => {
    const seen: string[] = [];
    await within(
      new Promise<void>((resolve, reject) => {
        const sub: FlowSubscription = connectSse(server.url, { isTerminal: (e) => e.data === '[DONE]' }).subscribeWithDemand({
          next: (event) => {
            seen.push(event.data);
            setTimeout(() => sub.request(1), 5); // a slow consumer asks for the next one when ready
          },
          error: reject,
          complete: resolve,
        });
        sub.request(1);
      }),
      2000,
    );
    expect(seen).toHaveLength(3);
  });

  it('consumes with subscribe and the map and filter tidegate exports', async () => {
    let text = '';
    await within(
      new Promise<void>((resolve, reject) => {
        connectSse(server.url, { method: 'POST', body: '{}', reconnect: false, isTerminal: (e) => e.data === '[DONE]' })
          .pipe(
            filter((e: SseEvent) => e.data !== '[DONE]'),
            map((e: SseEvent) => (JSON.parse(e.data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? ''),
          )
          .subscribe({ next: (token) => (text += token), error: reject, complete: resolve });
      }),
      2000,
    );
    expect(text).toBe('Hello');
  });

  it("pipes RxJS's own map and filter on a Flow", async () => {
    let text = '';
    await within(
      new Promise<void>((resolve, reject) => {
        connectSse(server.url, { method: 'POST', body: '{}', reconnect: false, isTerminal: (e) => e.data === '[DONE]' })
          .pipe(
            rxFilter((e: SseEvent) => e.data !== '[DONE]'),
            rxMap((e: SseEvent) => (JSON.parse(e.data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? ''),
          )
          .subscribe({ next: (token) => (text += token), error: reject, complete: resolve });
      }),
      2000,
    );
    expect(text).toBe('Hello');
  });
});
