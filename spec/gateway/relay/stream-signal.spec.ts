import type http from 'node:http';
import { fetchUpstream, TimeoutError, withRetries, type AbortSignalLike } from '../../../src';
import { CallSignal } from '../../../src/http/node-hooks';
import type { StreamContext } from '../../../src/gateway/relay/context';
import { listen, waitFor } from '../../harness/net';

// A stream's signal is a CallSignal, no WHATWG AbortSignal: its type says so, and the calls it is
// handed to take what they read of a signal (`aborted`, `reason`, the 'abort' listeners).

// @ts-expect-error a stream's signal has no onabort and is no EventTarget: AbortSignal.any() would throw on it
export const notWhatwg: AbortSignal = null as unknown as StreamContext['signal'];

describe("a stream's signal", () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let arrived = 0;
  let closed = 0;

  beforeAll(async () => {
    // Answers nothing: only an abort ends the call.
    upstream = await listen((_req: http.IncomingMessage, res: http.ServerResponse) => {
      arrived++;
      res.on('close', () => closed++);
    });
  });
  afterAll(() => upstream.close());

  it('aborts an upstream call it is given, with its reason, and closes the upstream socket', async () => {
    const callSignal = new CallSignal();
    const signal: AbortSignalLike = callSignal;
    const call = fetchUpstream({ url: `${upstream.url}/hang`, signal, firstByteTimeoutMs: 0 });
    await waitFor(() => arrived === 1);
    const reason = new Error('stream ended');
    callSignal.abort(reason);
    await expect(call).rejects.toBe(reason);
    await waitFor(() => closed === 1);
  });

  it("ends a retry's wait with its reason", async () => {
    const signal = new CallSignal();
    let attempts = 0;
    const retried = withRetries(
      async () => {
        attempts++;
        throw new TimeoutError('connect', 1, 'no connection within 1 ms');
      },
      { maxAttempts: 3, baseDelayMs: 60_000, maxDelayMs: 60_000 },
      { signal, random: () => 1 },
    );
    await waitFor(() => attempts === 1);
    const reason = new Error('shutdown');
    signal.abort(reason);
    await expect(retried).rejects.toBe(reason);
    expect(attempts).toBe(1);
  });
});
