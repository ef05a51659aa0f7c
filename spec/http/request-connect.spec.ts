import { TimeoutError } from '../../src/errors';
import { openUpstreamStream } from '../../src/http/request';
import { blackHole } from '../harness/black-hole';

describe('openUpstreamStream connect timeout', () => {
  it('rejects with TimeoutError kind connect when the connection is not established in time', async () => {
    const hole = await blackHole();
    try {
      const started = Date.now();
      const error = await openUpstreamStream({ url: `http://127.0.0.1:${hole.port}/sse`, method: 'GET', connectTimeoutMs: 300, firstByteTimeoutMs: 10_000 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).kind).toBe('connect');
      // It is the connect timer (300 ms) that fired, not the first-byte one (10 s).
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      hole.close();
    }
  });
});

describe('openUpstreamStream with an invalid URL', () => {
  it('fails with the URL parser’s error, every time (a checked URL is not parsed again)', async () => {
    for (let i = 0; i < 2; i++) {
      const error = await openUpstreamStream({ url: 'not a url', method: 'GET', route: '/r' }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect((error as { code?: string }).code).toBe('ERR_TIDEGATE_UPSTREAM_RESET');
      expect((error as Error).message).toBe('upstream for route /r connection failed (ERR_INVALID_URL)');
    }
  });
});
