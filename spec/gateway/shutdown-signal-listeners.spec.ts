import { getMaxListeners } from 'node:events';
import { startTestGateway, type TestGateway } from './helpers';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ sim: { tokensPerSecond: 200, ttftMs: 5 }, config: { stream: { heartbeatMs: 0 } } });
});
afterAll(async () => {
  await t.close();
});

describe('many concurrent streams and the shared shutdown signal', () => {
  it(
    'watches the shared shutdown signal through one listener, so 11+ concurrent streams print no MaxListenersExceededWarning',
    async () => {
      // Count live 'abort' listeners per AbortSignal (jest's sandbox does not surface process warnings).
      const live = new Map<AbortSignal, number>();
      const peak = new Map<AbortSignal, number>();
      const proto = EventTarget.prototype;
      const add = proto.addEventListener;
      const remove = proto.removeEventListener;
      proto.addEventListener = function (this: EventTarget, type: string, ...rest: unknown[]) {
        if (type === 'abort' && this instanceof AbortSignal) {
          const n = (live.get(this) ?? 0) + 1;
          live.set(this, n);
          peak.set(this, Math.max(peak.get(this) ?? 0, n));
        }
        return (add as (...a: unknown[]) => void).call(this, type, ...rest);
      } as typeof proto.addEventListener;
      proto.removeEventListener = function (this: EventTarget, type: string, ...rest: unknown[]) {
        if (type === 'abort' && this instanceof AbortSignal) live.set(this, Math.max(0, (live.get(this) ?? 0) - 1));
        return (remove as (...a: unknown[]) => void).call(this, type, ...rest);
      } as typeof proto.removeEventListener;
      try {
        const body = JSON.stringify({ model: 'sim', stream: true, messages: [{ role: 'user', content: 'hi' }] });
        const texts = await Promise.all(
          Array.from({ length: 15 }, () =>
            fetch(`${t.gateway.url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).then((r) => r.text()),
          ),
        );
        expect(texts.every((x) => x.includes('data: [DONE]'))).toBe(true);
        // Node warns (MaxListenersExceededWarning) when a signal holds more listeners than its limit.
        const offenders = [...peak].filter(([signal, n]) => {
          let max: number;
          try {
            max = getMaxListeners(signal);
          } catch {
            return false; // a signal from another realm (jest's sandbox): Node's limit does not apply
          }
          return max !== 0 && n > max;
        });
        // The check must have seen the streams: each listens to a signal of its own.
        expect(peak.size).toBeGreaterThanOrEqual(15);
        expect(offenders.map(([, n]) => n)).toEqual([]);
        // And the shared shutdown signal is watched through one listener for all of them
        // (src/gateway/abort-watch.ts), not one per stream.
        expect(Math.max(...peak.values())).toBeLessThan(15);
      } finally {
        proto.addEventListener = add;
        proto.removeEventListener = remove;
      }
    },
  );
});
