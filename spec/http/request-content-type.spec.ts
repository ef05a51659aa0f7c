import type http from 'node:http';
import { UpstreamNotStreamError } from '../../src/http/errors';
import { openUpstreamStream } from '../../src/http/request';
import { listen } from '../harness/net';

/**
 * A streaming call takes any 2xx whose media type is `text/event-stream`, however the upstream
 * spells it (RFC 9110 §8.3.1: case-insensitive, parameters after optional whitespace), and
 * refuses any other with an error whose message carries none of the upstream's header.
 */
describe('openUpstreamStream and the upstream content type', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      const contentType = decodeURIComponent((req.url ?? '/').slice(1));
      res.writeHead(200, contentType === '' ? {} : { 'content-type': contentType });
      res.end('data: x\n\n');
    });
  });

  afterAll(() => upstream.close());

  const open = (contentType: string) => openUpstreamStream({ url: `http://127.0.0.1:${upstream.port}/${encodeURIComponent(contentType)}`, body: '{}', route: '/r' });

  it.each(['TEXT/Event-Stream ; charset=latin1', 'Text/Event-Stream', 'text/event-stream\t;charset=utf-8'])('streams %j', async (contentType) => {
    const stream = await open(contentType);
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => stream.body.subscribe({ next: (b: Buffer) => chunks.push(b), error: reject, complete: resolve }));
    expect(Buffer.concat(chunks).toString()).toBe('data: x\n\n');
  });

  it.each([
    ['text/html; secret=sk-upstream-1234', 'another content type'],
    ['application/json, text/event-stream', 'another content type'],
    ['Application/JSON; charset=utf-8', 'application/json'],
    ['', 'no content type'],
  ])('refuses %j naming only what kind of type it was', async (contentType, said) => {
    const error = await open(contentType).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamNotStreamError);
    const { message } = error as UpstreamNotStreamError;
    expect(message).toBe(`upstream for route /r answered HTTP 200 with ${said}, not text/event-stream`);
    expect((error as UpstreamNotStreamError).contentType).toBe(contentType === '' ? undefined : contentType);
  });
});
