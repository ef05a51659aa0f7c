/**
 * A JSON request body reaches the upstream as the client sent it: numbers JSON.stringify would
 * change, key order and spacing intact. Only a body the route rewrites (a stream asked of a
 * route that does not stream) or one whose top-level keys repeat is re-serialized.
 */
import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

describe('JSON request bodies forwarded as sent', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  const bodies: string[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        bodies.push(text);
        if (text.includes('"stream": true') && !text.includes('"stream":false')) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}');
      });
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: upstream.url },
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/completions', provider: 'openai', api: 'completions', stream: false },
      ],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  async function send(path: string, text: string): Promise<string> {
    bodies.length = 0;
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    expect(res.status).toBe(200);
    await res.text();
    expect(bodies).toHaveLength(1);
    return bodies[0];
  }

  const SENT = '{"seed": 18446744073709551615, "model":"m", "temperature": -0, "top_p": 1e999,\n "messages":[{"role":"user","content":"x"}]}';

  it('keeps numbers past 2^53, -0, 1e999, spacing and key order of a whole answer', async () => {
    expect(await send('/v1/chat/completions', SENT)).toBe(SENT);
  });

  it('keeps them for a stream too', async () => {
    const streamed = SENT.replace('"model":"m"', '"model":"m", "stream": true');
    expect(await send('/v1/chat/completions', streamed)).toBe(streamed);
  });

  it('sends a body with a top-level key given twice as the gateway read it (the last one)', async () => {
    const forwarded = await send('/v1/chat/completions', '{"stream": true, "model":"m", "messages":[], "stream": false}');
    expect(forwarded).toBe('{"stream":false,"model":"m","messages":[]}');
  });

  it('re-serializes only the body a route rewrites (a stream asked of a route that does not stream)', async () => {
    const forwarded = await send('/v1/completions', '{"model":"m", "prompt":"x", "stream": true, "stream_options": {"include_usage": true}}');
    expect(JSON.parse(forwarded)).toEqual({ model: 'm', prompt: 'x', stream: false });
  });
});
