import { PassThrough } from 'node:stream';
import { readBounded } from '../../src/http/read-bounded';

const listeners = (s: PassThrough): number => ['data', 'end', 'error', 'close'].reduce((n, e) => n + s.listenerCount(e), 0);

describe('readBounded', () => {
  it('resolves the whole body and leaves no listener', async () => {
    const body = new PassThrough();
    const read = readBounded(body, { maxBytes: 10, tooLarge: () => new Error('too large') });
    body.write('abc');
    body.end('def');
    await expect(read).resolves.toEqual(Buffer.from('abcdef'));
    expect(listeners(body)).toBe(0);
  });

  it('rejects with tooLarge() at the chunk that passes maxBytes, keeping nothing more', async () => {
    const body = new PassThrough();
    const seen: number[] = [];
    const read = readBounded(body, { maxBytes: 4, tooLarge: (max) => (seen.push(max), new RangeError('too large')) });
    body.write('abc');
    body.write('de');
    await expect(read).rejects.toThrow(RangeError);
    expect(seen).toEqual([4]);
    expect(listeners(body)).toBe(0);
  });

  it('rejects with idled() after a silence of idleMs, each chunk restarting the wait', async () => {
    const body = new PassThrough();
    const started = Date.now();
    const read = readBounded(body, { maxBytes: 100, tooLarge: () => new Error('x'), idleMs: 60, idled: (ms) => new Error(`idle ${ms}`) });
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 30));
      body.write('a');
    }
    await expect(read).rejects.toThrow('idle 60');
    expect(Date.now() - started).toBeGreaterThanOrEqual(170);
    expect(listeners(body)).toBe(0);
  });

  it('resolves with what arrived when idled() returns undefined', async () => {
    const body = new PassThrough();
    const read = readBounded(body, { maxBytes: 100, tooLarge: () => new Error('x'), idleMs: 30, idled: () => undefined });
    body.write('ab');
    body.write('c');
    await expect(read).resolves.toEqual(Buffer.from('abc'));
    expect(listeners(body)).toBe(0);
  });

  it('rejects with timedOut() at the deadline and clears its timer', async () => {
    const body = new PassThrough();
    const read = readBounded(body, { maxBytes: 100, tooLarge: () => new Error('x'), timeoutMs: 30, timedOut: (ms) => new Error(`late ${ms}`) });
    body.write('a');
    await expect(read).rejects.toThrow('late 30');
    expect(listeners(body)).toBe(0);
  });

  it('an early close rejects with closedEarly(), or resolves what arrived without it', async () => {
    const a = new PassThrough();
    const rejecting = readBounded(a, { maxBytes: 100, tooLarge: () => new Error('x'), closedEarly: () => new Error('gone') });
    a.write('a');
    a.destroy();
    await expect(rejecting).rejects.toThrow('gone');
    const b = new PassThrough();
    const resolving = readBounded(b, { maxBytes: 100, tooLarge: () => new Error('x') });
    b.write('ab');
    await new Promise((r) => setImmediate(r));
    b.destroy();
    await expect(resolving).resolves.toEqual(Buffer.from('ab'));
  });

  it("rejects with the body's own error", async () => {
    const body = new PassThrough();
    const read = readBounded(body, { maxBytes: 100, tooLarge: () => new Error('x') });
    body.destroy(new Error('broken'));
    await expect(read).rejects.toThrow('broken');
  });

  it('settles at once on a body destroyed before the read, without waiting out its deadlines', async () => {
    const limits = { maxBytes: 100, tooLarge: () => new Error('x'), idleMs: 10_000, idled: () => new Error('idle'), closedEarly: () => new Error('gone') };
    const errored = new PassThrough();
    errored.on('error', () => undefined); // the error went to a listener that left since
    errored.destroy(new Error('broken'));
    await new Promise((r) => setImmediate(r));
    await expect(readBounded(errored, limits)).rejects.toThrow('broken');
    const closed = new PassThrough();
    closed.destroy();
    await new Promise((r) => setImmediate(r));
    await expect(readBounded(closed, limits)).rejects.toThrow('gone');
    expect(listeners(errored) + listeners(closed)).toBe(1); // only the spec's own
  });
});
