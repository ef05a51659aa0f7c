import { TimeoutError } from '../../src/errors';
import { UpstreamHttpError, UpstreamResetError, UpstreamStreamError } from '../../src/http/errors';
import { retryDelayMs, withRetries } from '../../src/http/retry';

const http = (status: number, retryAfterMs?: number): UpstreamHttpError => new UpstreamHttpError(status, '{}', 'application/json', retryAfterMs);

describe('retryDelayMs', () => {
  it('takes the default for a policy field given as undefined', () => {
    const policy = { maxAttempts: undefined, baseDelayMs: undefined, maxDelayMs: undefined, maxRetryAfterMs: undefined, retryStatuses: undefined };
    expect(retryDelayMs(http(503), 1, policy, () => 0.5)).toBe(125);
    expect(retryDelayMs(http(503), 3, policy, () => 0.5)).toBeUndefined(); // maxAttempts 3
    expect(retryDelayMs(http(429, 1000), 1, policy, () => 0)).toBe(1000);
  });

  it('retries 429, 502 and 503', () => {
    for (const s of [429, 502, 503]) expect(retryDelayMs(http(s), 1, {}, () => 0.5)).toBe(125);
  });

  it('never retries other 4xx or 500', () => {
    for (const s of [400, 401, 403, 404, 422, 500]) expect(retryDelayMs(http(s), 1)).toBeUndefined();
  });

  it('honours Retry-After as given', () => {
    expect(retryDelayMs(http(429, 1000), 1, {}, () => 0)).toBe(1000);
  });

  it('does not wait for a Retry-After above maxRetryAfterMs', () => {
    expect(retryDelayMs(http(503, 60_000), 1, { maxRetryAfterMs: 30_000 })).toBeUndefined();
  });

  it('retries network failures and connect timeouts, not first-byte timeouts or stream errors', () => {
    expect(retryDelayMs(new UpstreamResetError('ECONNREFUSED'), 1)).toBeDefined();
    expect(retryDelayMs(new TimeoutError('connect', 10), 1)).toBeDefined();
    expect(retryDelayMs(new TimeoutError('first', 10), 1)).toBeUndefined();
    expect(retryDelayMs(new UpstreamStreamError('x', 'server_error'), 1)).toBeUndefined();
  });

  it('grows the backoff ceiling exponentially up to maxDelayMs (full jitter)', () => {
    const top = (attempt: number): number | undefined => retryDelayMs(http(503), attempt, { maxAttempts: 10, baseDelayMs: 100, maxDelayMs: 500 }, () => 0.999999);
    expect([1, 2, 3, 4, 5].map(top)).toEqual([99, 199, 399, 499, 499]);
    expect(retryDelayMs(http(503), 1, { baseDelayMs: 100 }, () => 0)).toBe(0);
  });

  it('stops at maxAttempts', () => {
    expect(retryDelayMs(http(503), 3, { maxAttempts: 3 })).toBeUndefined();
  });
});

describe('withRetries', () => {
  it('returns the first success and reports each retry', async () => {
    const notices: number[] = [];
    let calls = 0;
    const value = await withRetries(
      async () => {
        if (++calls < 3) throw http(502);
        return 'ok';
      },
      { baseDelayMs: 1 },
      { onRetry: (n) => notices.push(n.attempt) },
    );
    expect(value).toBe('ok');
    expect(notices).toEqual([2, 3]);
  });

  it('rethrows a non-retryable error after one call', async () => {
    let calls = 0;
    await expect(
      withRetries(async () => {
        calls++;
        throw http(400);
      }),
    ).rejects.toBeInstanceOf(UpstreamHttpError);
    expect(calls).toBe(1);
  });

  it('stops waiting when the signal aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('client left');
    const p = withRetries(() => Promise.reject(http(429, 10_000)), {}, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 10);
    await expect(p).rejects.toBe(reason);
  });

  it('ends a wait at once with the last error when stopRetries aborts, reporting no retry', async () => {
    const stop = new AbortController();
    const last = http(429, 10_000);
    const notices: number[] = [];
    let calls = 0;
    const started = Date.now();
    const p = withRetries(
      () => {
        calls++;
        return Promise.reject(last);
      },
      {},
      { stopRetries: stop.signal, onRetry: (n) => notices.push(n.attempt) },
    );
    setTimeout(() => stop.abort(new Error('draining')), 10);
    await expect(p).rejects.toBe(last);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(calls).toBe(1);
    expect(notices).toEqual([]);
  });

  it('starts no retry once stopRetries has aborted', async () => {
    const stop = new AbortController();
    stop.abort(new Error('draining'));
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls++;
          throw http(503);
        },
        { baseDelayMs: 1 },
        { stopRetries: stop.signal },
      ),
    ).rejects.toBeInstanceOf(UpstreamHttpError);
    expect(calls).toBe(1);
  });

  it('leaves no listener on either signal after a wait', async () => {
    const signal = new AbortController().signal;
    const stop = new AbortController().signal;
    const added: string[] = [];
    const removed: string[] = [];
    for (const [name, s] of [['signal', signal], ['stop', stop]] as const) {
      const add = s.addEventListener.bind(s);
      const remove = s.removeEventListener.bind(s);
      s.addEventListener = ((type: string, l: () => void, o?: AddEventListenerOptions) => (added.push(name), add(type, l, o))) as typeof s.addEventListener;
      s.removeEventListener = ((type: string, l: () => void) => (removed.push(name), remove(type, l))) as typeof s.removeEventListener;
    }
    let calls = 0;
    const value = await withRetries(
      async () => {
        if (++calls < 2) throw http(503);
        return 'ok';
      },
      { baseDelayMs: 1 },
      { signal, stopRetries: stop },
    );
    expect(value).toBe('ok');
    expect(added.sort()).toEqual(['signal', 'stop']);
    expect(removed.sort()).toEqual(['signal', 'stop']);
  });
});
