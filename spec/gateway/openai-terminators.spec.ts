import type http from 'node:http';
import OpenAI from 'openai';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSseParser, type SseEvent } from '../../src/sse';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

/**
 * The forms of the OpenAI terminator compatible servers send end the stream cleanly on both
 * relays (outcome `completed`, no truncation error), and reach the client with data `[DONE]`,
 * the form openai-node's `Stream` ends on (`data:  [DONE]`, which it would not match, as
 * `data: [DONE]`).
 */

const VARIANTS: Record<string, string> = {
  'one-space': 'data: [DONE]\n\n',
  'two-spaces': 'data:  [DONE]\n\n',
  'no-space': 'data:[DONE]\n\n',
  crlf: 'data: [DONE]\r\n\r\n',
  'no-space-crlf': 'data:[DONE]\r\n\r\n',
  'two-spaces-crlf': 'data:  [DONE]\r\n\r\n',
};

const chunk = (content: string, eol = '\n'): string => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}${eol}${eol}`;

/** Sends two chunks and the terminator `x-variant` names, then holds the connection open (`x-hold`) or closes it. */
function upstreamHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.resume();
  const variant = VARIANTS[String(req.headers['x-variant'])] ?? '';
  const eol = variant.includes('\r') ? '\r\n' : '\n';
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk('Hel', eol));
  res.write(chunk('lo', eol));
  if (req.headers['x-hold'] === '1') {
    res.write(variant);
    // Open until the gateway hangs up (its drain after the terminator) or the test ends.
    const t = setTimeout(() => res.end(), 5000).unref();
    res.once('close', () => clearTimeout(t));
  } else res.end(variant);
}

describe('OpenAI terminator variants', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();

  beforeAll(async () => {
    upstream = await listen(upstreamHandler);
    const route = { provider: 'openai', url: `${upstream.url}/v1/chat/completions`, forwardHeaders: ['content-type', 'x-variant', 'x-hold'] };
    gateway = await startGateway(
      parseConfig({
        port: 0,
        routes: [
          { ...route, path: '/bytes/v1/chat/completions' },
          { ...route, path: '/events/v1/chat/completions', policy: { relay: 'events' } },
        ],
      }),
      { logger: createLogger({ transports: [logs] }) },
    );
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  const cases = Object.keys(VARIANTS).flatMap((variant) => ['/bytes', '/events'].flatMap((relay) => ['0', '1'].map((hold) => ({ variant, relay, hold }))));

  it.each(cases)('$variant on $relay (upstream held open: $hold) ends completed with data: [DONE]', async ({ variant, relay, hold }) => {
    const res = await fetch(`${gateway.url}${relay}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-variant': variant, 'x-hold': hold },
      body: JSON.stringify({ model: 'm', stream: true, messages: [] }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const streamId = res.headers.get('x-tidegate-stream-id');
    expect(res.status).toBe(200);
    expect(text).toContain('"content":"Hel"');
    expect(text).toContain('"content":"lo"');
    // What the client's parser makes of the body: the last event is the terminator, data `[DONE]`.
    const events: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (e) => events.push(e) });
    parser.feed(Buffer.from(text));
    expect(events.map((e) => e.data)).toEqual([expect.stringContaining('"Hel"'), expect.stringContaining('"lo"'), '[DONE]']);
    if (variant.startsWith('two-spaces')) expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).not.toContain('ERR_TIDEGATE');
    // The stream's log line follows its end by a tick or two.
    const deadline = Date.now() + 2000;
    let line = logs.streams().find((l) => l.streamId === streamId);
    while (line === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      line = logs.streams().find((l) => l.streamId === streamId);
    }
    expect(line?.outcome).toBe('completed');
    expect(line?.errorCode).toBeUndefined();
  });

  it.each(['/bytes', '/events'])('openai-node ends its stream cleanly on data:  [DONE] through %s', async (relay) => {
    const client = new OpenAI({
      baseURL: `${gateway.url}${relay}/v1`,
      apiKey: 'client-key',
      maxRetries: 0,
      defaultHeaders: { 'x-variant': 'two-spaces', 'x-hold': '1' },
    });
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [] });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello');
  });
});
