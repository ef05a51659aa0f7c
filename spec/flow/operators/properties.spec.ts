import fc from 'fast-check';
import { fromIterable, limitRate, limitRequest, onBackpressureBuffer, filter } from '../../../src/flow';
import type { BufferOverflowStrategy } from '../../../src/flow';
import { TestPublisher, range, record } from './test-publisher';

describe('demand properties', () => {
  it('emissions never exceed the summed demand, whatever the request sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: -2, max: 80 }),
        fc.integer({ min: 0, max: 250 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 30 }),
        (size, highTide, lowTide, cap, requests) => {
          const source = fromIterable(range(1, size));
          const rec = record(
            source.pipe(
              limitRate<number>(highTide, lowTide),
              onBackpressureBuffer<number>({ maxBytes: 1_000_000 }),
              filter((x: number) => x % 3 !== 0),
              limitRequest<number>(cap),
            ),
          );
          let demand = 0;
          for (const n of requests) {
            rec.sub.request(n);
            demand += n;
            expect(rec.values.length).toBeLessThanOrEqual(demand);
          }
          expect(rec.errors).toEqual([]);
          // values arrive in order and are exactly the filtered prefix
          const expected = range(1, size).filter((x) => x % 3 !== 0).slice(0, Math.min(cap, demand));
          expect(rec.values).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a buffer's accounted bytes never exceed maxBytes and return to 0 once it is drained", () => {
    const strategies: BufferOverflowStrategy[] = ['error', 'drop-latest', 'drop-oldest', 'terminate'];
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.constantFrom(...strategies),
        fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 })), { maxLength: 60 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 60 }),
        (maxBytes, overflow, elements, requests) => {
          const pub = new TestPublisher<string>();
          let maxSeen = 0;
          let lastBytes = 0;
          const rec = record(
            pub.flow.pipe(
              onBackpressureBuffer<string>({
                maxBytes,
                overflow,
                onBufferChange: (bytes) => {
                  maxSeen = Math.max(maxSeen, bytes);
                  lastBytes = bytes;
                },
              }),
            ),
          );
          let delivered = 0;
          elements.forEach((el, i) => {
            pub.next(el);
            const n = requests[i] ?? 0;
            if (n > 0) rec.sub.request(n);
            delivered = rec.values.length;
          });
          expect(maxSeen).toBeLessThanOrEqual(maxBytes);
          expect(lastBytes).toBeGreaterThanOrEqual(0);
          expect(delivered).toBeLessThanOrEqual(requests.reduce((a, b) => a + b, 0));
          for (const v of rec.values) expect(Buffer.byteLength(v)).toBeLessThanOrEqual(maxBytes);
          rec.sub.request(Infinity);
          expect(lastBytes).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
