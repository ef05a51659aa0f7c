import http from 'node:http';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { mergeQuery } from '../../src/gateway/upstream-url';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

describe('passthrough route query string', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: [DONE]\n\n');
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: 'http://127.0.0.1:1' },
      routes: [{ path: '/events', provider: 'passthrough', url: `${upstream.url}/sse?model=small&tag=a&tag=b` }],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  async function relayedQuery(query: string): Promise<URLSearchParams> {
    seen.length = 0;
    const res = await fetch(`${gw.url}/events${query}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('data: [DONE]\n\n');
    expect(seen).toHaveLength(1);
    return new URL(seen[0], 'http://x').searchParams;
  }

  it('keeps the configured value when the client sends the same key', async () => {
    const q = await relayedQuery('?model=large');
    expect(q.getAll('model')).toEqual(['small']);
    expect(q.getAll('tag')).toEqual(['a', 'b']);
  });

  it('never lets the client repeat a configured key, whatever its position or count', async () => {
    const q = await relayedQuery('?tag=c&model=large&model=huge&tag=d');
    expect(q.getAll('model')).toEqual(['small']);
    expect(q.getAll('tag')).toEqual(['a', 'b']);
  });

  it('appends the keys the configuration does not set, with all their values in order', async () => {
    const q = await relayedQuery('?cursor=7&model=large&extra=1&extra=2');
    expect([...q]).toEqual([
      ['model', 'small'],
      ['tag', 'a'],
      ['tag', 'b'],
      ['cursor', '7'],
      ['extra', '1'],
      ['extra', '2'],
    ]);
  });

  it('forwards the configured query unchanged when the client sends none', async () => {
    await relayedQuery('');
    expect(seen[0]).toBe('/sse?model=small&tag=a&tag=b');
  });
});

describe('mergeQuery', () => {
  it('treats percent-encoded and plus-encoded spellings of a configured key as that key', () => {
    const merged = new URL(mergeQuery('http://u/p?a+b=1', 'a%20b=2&a b=3&c=4'));
    expect(merged.searchParams.getAll('a b')).toEqual(['1']);
    expect(merged.searchParams.getAll('c')).toEqual(['4']);
  });

  it('drops a client key that differs from a configured one only in case', () => {
    const merged = new URL(mergeQuery('http://u/p?token=secret&api-version=1', 'TOKEN=evil&Api-Version=2&Extra=x'));
    expect([...merged.searchParams]).toEqual([
      ['token', 'secret'],
      ['api-version', '1'],
      ['Extra', 'x'],
    ]);
  });
});
