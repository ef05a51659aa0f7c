import type http from 'node:http';
import { UpstreamRedirectError } from '../../src/http/errors';
import { fetchUpstream, openUpstreamStream, type UpstreamRequest } from '../../src/http/request';
import { listen } from '../harness/net';

/**
 * Every 3xx final answer ends a call with `UpstreamRedirectError`, whether the call follows
 * redirects or not: `reason` says whether it was a redirect not followed or a 3xx nothing can
 * follow (300, 304, 305, a redirect without `Location`).
 */
describe('openUpstreamStream and fetchUpstream on a 3xx', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      const [, status, location] = (req.url ?? '').split('/');
      if (status === '200') {
        res.writeHead(200, { 'content-type': req.headers.accept === 'application/json' ? 'application/json' : 'text/event-stream' });
        res.end(req.headers.accept === 'application/json' ? '{}' : 'data: x\n\n');
        return;
      }
      res.writeHead(Number(status), location === 'located' ? { location: '/200/', 'content-type': 'application/json' } : { 'content-type': 'application/json' });
      res.end('{"choices":"upstream-body"}');
    });
  });

  afterAll(() => upstream.close());

  const request = (path: string, followRedirects: UpstreamRequest['followRedirects']): UpstreamRequest => ({
    url: `http://127.0.0.1:${upstream.port}${path}`,
    body: '{}',
    route: '/r',
    followRedirects,
  });

  async function refusal(open: (r: UpstreamRequest) => Promise<unknown>, r: UpstreamRequest): Promise<UpstreamRedirectError> {
    const err = await open(r).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamRedirectError);
    return err as UpstreamRedirectError;
  }

  it.each([
    [300, false],
    [304, false],
    [305, false],
    [300, 'same-origin'],
    [304, true],
    [305, 'same-origin'],
  ] as const)('rejects HTTP %s as unfollowable (followRedirects: %s)', async (status, follow) => {
    for (const open of [openUpstreamStream, fetchUpstream]) {
      const err = await refusal(open, request(`/${status}/located`, follow));
      expect(err).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_REDIRECT', upstreamStatus: status, reason: 'unfollowable' });
      expect(err.message).toContain(`HTTP ${status}`);
      expect(err.message).not.toContain('upstream-body');
    }
  });

  it('rejects a redirect without Location as unfollowable on a call that follows redirects', async () => {
    for (const open of [openUpstreamStream, fetchUpstream]) {
      expect(await refusal(open, request('/307/', 'same-origin'))).toMatchObject({ upstreamStatus: 307, reason: 'unfollowable' });
    }
  });

  it('rejects a redirect as not followed on a call that does not follow redirects', async () => {
    for (const open of [openUpstreamStream, fetchUpstream]) {
      expect(await refusal(open, request('/302/located', false))).toMatchObject({ upstreamStatus: 302, reason: 'not-followed' });
    }
  });

  it('follows a redirect with Location on a call that follows redirects', async () => {
    const stream = await openUpstreamStream(request('/307/located', 'same-origin'));
    expect(stream.response.status).toBe(200);
    stream.body.subscribeWithDemand({}).cancel();
    expect((await fetchUpstream(request('/308/located', true))).status).toBe(200);
  });
});
