import { TimeoutError } from '../../src/errors';
import { UpstreamBodyTooLargeError, UpstreamHttpError, UpstreamNotStreamError, UpstreamResetError } from '../../src/http/errors';
import { retryDelayMs } from '../../src/http/retry';

/** Only what failed before the upstream answered, or answered a retryable status, is retried. */
describe('retryDelayMs: answered calls', () => {
  const half = (): number => 0.5;

  it('never retries an answer with status 200, whatever its body', () => {
    expect(retryDelayMs(new UpstreamNotStreamError(200, 'application/json'), 1, {}, half)).toBeUndefined();
    expect(retryDelayMs(new UpstreamBodyTooLargeError(200, 1024), 1, {}, half)).toBeUndefined();
    expect(retryDelayMs(new UpstreamResetError('broke', { status: 200 }), 1, {}, half)).toBeUndefined();
    // Even when a policy lists 200 among its statuses.
    expect(retryDelayMs(new UpstreamHttpError(200, '', undefined), 1, { retryStatuses: [200, 502] }, half)).toBeUndefined();
  });

  it('retries a failure before the status line, and a retryable status with any body', () => {
    expect(retryDelayMs(new UpstreamResetError('unreachable'), 1, { baseDelayMs: 100 }, half)).toBe(50);
    expect(retryDelayMs(new TimeoutError('connect', 10), 1, { baseDelayMs: 100 }, half)).toBe(50);
    expect(retryDelayMs(new UpstreamHttpError(503, '', undefined), 1, { baseDelayMs: 100 }, half)).toBe(50);
    expect(retryDelayMs(new UpstreamBodyTooLargeError(503, 1024), 1, { baseDelayMs: 100 }, half)).toBe(50);
    expect(retryDelayMs(new UpstreamResetError('broke', { status: 429 }), 1, { baseDelayMs: 100 }, half)).toBe(50);
  });

  it('never retries an answer the HTTP parser refused before a status line', () => {
    expect(retryDelayMs(new UpstreamResetError('unparsable', { errno: 'HPE_HEADER_OVERFLOW', answered: true }), 1, {}, half)).toBeUndefined();
  });

  it('does not retry a body too large or broken after a status not in retryStatuses', () => {
    expect(retryDelayMs(new UpstreamBodyTooLargeError(500, 1024), 1, {}, half)).toBeUndefined();
    expect(retryDelayMs(new UpstreamResetError('broke', { status: 400 }), 1, {}, half)).toBeUndefined();
  });
});
