import zlib from 'node:zlib';
import { connectSse } from '../../src/client';
import { UpstreamEncodingError, UpstreamUpgradeError } from '../../src/http/errors';
import { sleep } from '../harness/net';
import { collect, scriptedServers, sseHead, within } from './helpers';

/** connectSse against servers that ignore what the client asked for. */

const serve = scriptedServers();

describe('connectSse against hostile servers', () => {
  it('decodes a gzip body sent despite Accept-Encoding: identity instead of ending an empty clean stream', async () => {
    const server = await serve((_req, res) => {
      sseHead(res, { 'content-encoding': 'gzip' });
      res.end(zlib.gzipSync('data: zipped\n\ndata: [DONE]\n\n'));
    });
    const c = collect(connectSse(server.url, { isTerminal: (e) => e.data === '[DONE]', reconnect: false }));
    expect(await within(c.done, 3000)).toEqual({});
    expect(c.events.map((e) => e.data)).toEqual(['zipped', '[DONE]']);
    expect(server.requests[0]?.headers['accept-encoding']).toBe('identity');
  });

  it.each([
    ['with an Upgrade header', 'Connection: Upgrade\r\nUpgrade: websocket\r\n'],
    ['without an Upgrade header', ''],
  ])('fails at once, without reconnecting, when the server switches protocols (101 %s), its socket closed', async (_name, headers) => {
    let closed = 0;
    const server = await serve((_req, res) => {
      res.socket?.once('close', () => closed++);
      res.socket?.write(`HTTP/1.1 101 Switching Protocols\r\n${headers}\r\n`);
    });
    // Default options: no timeout that would end a wait for an answer that never comes.
    const c = collect(connectSse(server.url));
    const { error } = await within(c.done, 3000);
    expect(error).toBeInstanceOf(UpstreamUpgradeError);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_RESET', status: 101 });
    await sleep(50);
    expect(server.requests).toHaveLength(1);
    expect(closed).toBe(1);
  });

  it.each(['zstd', 'gzip, br'])('fails at once, without reconnecting, when the stream comes in a coding it does not decode (%s), its socket closed', async (coding) => {
    let closed = 0;
    const server = await serve((_req, res) => {
      res.socket?.once('close', () => closed++);
      sseHead(res, { 'content-encoding': coding });
      res.end('data: not identity\n\n');
    });
    const c = collect(connectSse(server.url));
    const { error } = await within(c.done, 3000);
    expect(error).toBeInstanceOf(UpstreamEncodingError);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_ENCODING', upstreamStatus: 200, contentEncoding: coding });
    expect(c.events).toEqual([]);
    await sleep(50);
    expect(server.requests).toHaveLength(1);
    expect(closed).toBe(1);
  });

  it('streams gzip events as they are flushed, not at the end of the body', async () => {
    const server = await serve((_req, res) => {
      sseHead(res, { 'content-encoding': 'gzip' });
      const gz = zlib.createGzip();
      gz.pipe(res);
      gz.write('data: first\n\n');
      gz.flush(zlib.constants.Z_SYNC_FLUSH);
      // the rest never comes until the client cancels
    });
    const c = collect(connectSse(server.url, { reconnect: false }));
    const deadline = Date.now() + 3000;
    while (c.events.length === 0 && Date.now() < deadline) await sleep(10);
    expect(c.events.map((e) => e.data)).toEqual(['first']);
    c.sub.cancel();
  });

  it.each([
    ['beyond 2^31-1 ms', '99999999'],
    ['too large for a number', '9'.repeat(400)],
  ])('waits out a Retry-After %s instead of reconnecting at once, and reports a finite delay', async (_name, retryAfter) => {
    const server = await serve((_req, res) => {
      res.writeHead(503, { 'retry-after': retryAfter, 'content-type': 'text/plain' });
      res.end('go away');
    });
    const delays: number[] = [];
    const c = collect(connectSse(server.url, { onReconnect: (info) => delays.push(info.delayMs), maxAttempts: 5 }));
    await sleep(300);
    c.sub.cancel();
    expect(server.requests).toHaveLength(1);
    expect(delays[0]).toBeGreaterThan(2 ** 31);
    expect(Number.isFinite(delays[0])).toBe(true);
  });
});
