import fs from 'node:fs';
import winston from 'winston';
import { createLogger, jsonLine, LOG_FLUSH_BYTES, LOG_FLUSH_MS } from '../../src/gateway/logger';

/**
 * Captures what the logger writes to stdout's descriptor (it writes with `fs.writeSync`), one
 * string per write. `process.stdout` reads as holding nothing unwritten (the logger waits while
 * another writer's bytes are queued there; jest's own output must not make it wait).
 */
function captureStdout(): { writes: string[]; spy: { mockRestore(): void } } {
  const writes: string[] = [];
  const write = jest.spyOn(fs, 'writeSync').mockImplementation(((fd: number, chunk: Uint8Array) => {
    if (fd === process.stdout.fd) writes.push(Buffer.from(chunk).toString());
    return chunk.length;
  }) as typeof fs.writeSync);
  // An own property over Writable.prototype's getter (which is not configurable to spy on).
  Object.defineProperty(process.stdout, 'writableLength', { configurable: true, get: () => 0 });
  return {
    writes,
    spy: {
      mockRestore: () => {
        write.mockRestore();
        delete (process.stdout as { writableLength?: number }).writableLength;
      },
    },
  };
}

/** Resolves once the logger's batch of lines has been written. */
const flushed = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, LOG_FLUSH_MS + 5));

describe('createLogger', () => {
  it('writes the lines logged within LOG_FLUSH_MS to stdout in one write, in order', async () => {
    const { writes, spy } = captureStdout();
    // The batch's timer is faked: a slow first call on a loaded machine must not outlast it.
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const logger = createLogger({ level: 'info' });
      logger.info('first', { n: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      logger.info('second', { n: 2 });
      logger.info('third', { n: 3 });
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toEqual([]);
      jest.advanceTimersByTime(LOG_FLUSH_MS - 1);
      expect(writes).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(writes).toHaveLength(1);
      const lines = (writes[0] as string).split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.map((l) => (JSON.parse(l) as { message: string; n: number }).message)).toEqual(['first', 'second', 'third']);
    } finally {
      jest.useRealTimers();
      spy.mockRestore();
    }
  });

  it('writes the waiting lines at once when they reach LOG_FLUSH_BYTES', async () => {
    const { writes, spy } = captureStdout();
    try {
      const logger = createLogger({ level: 'info' });
      const filler = 'x'.repeat(1000);
      const count = Math.ceil(LOG_FLUSH_BYTES / 1000);
      for (let i = 0; i < count; i++) logger.info('line', { i, filler });
      // The lines up to the threshold are written before this turn ends, each write whole lines
      // (on a pipe, in writes of at most PIPE_ATOMIC_BYTES); the rest wait for the timer.
      const atThreshold = writes.join('').split('\n').filter((l) => l !== '').length;
      expect(atThreshold * (filler.length + 100)).toBeGreaterThanOrEqual(LOG_FLUSH_BYTES);
      expect(atThreshold).toBeLessThan(count);
      for (const w of writes) expect(w.endsWith('\n')).toBe(true);
      const writesAtThreshold = writes.length;
      logger.info('after', { i: count });
      expect(writes).toHaveLength(writesAtThreshold);
      await flushed();
      expect(writes.length).toBeGreaterThan(writesAtThreshold);
      const lines = writes.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { i: number });
      expect(lines.map((l) => l.i)).toEqual([...Array(count + 1).keys()]);
    } finally {
      spy.mockRestore();
    }
  });

  it('writes nothing when silent', async () => {
    const { writes, spy } = captureStdout();
    try {
      const logger = createLogger({ silent: true });
      logger.info('nothing');
      await flushed();
      expect(writes).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('createLogger levels and formats', () => {
  it.each(['INFO', 'trace', ''])('refuses the level %p with a ConfigError naming the levels, where winston would log nothing', (level) => {
    expect(() => createLogger({ level })).toThrow(expect.objectContaining({ code: 'ERR_TIDEGATE_CONFIG', message: `invalid log level ${JSON.stringify(level)}: expected one of error, warn, info, http, verbose, debug, silly` }));
  });

  async function linesOf(log: (logger: ReturnType<typeof createLogger>) => void, level = 'info'): Promise<Record<string, unknown>[]> {
    const { writes, spy } = captureStdout();
    try {
      log(createLogger({ level }));
      await flushed();
    } finally {
      spy.mockRestore();
    }
    return writes.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('drops entries below the level, also after the level changes', async () => {
    const lines = await linesOf((logger) => {
      logger.debug('hidden');
      logger.warn('shown', { n: 1 });
      logger.level = 'debug';
      logger.debug('now shown');
    });
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['warn', 'shown'],
      ['debug', 'now shown'],
    ]);
  });

  it('writes each line as JSON with its fields, a timestamp and the level', async () => {
    const [line] = await linesOf((logger) => logger.info('stream', { streamId: 'abc', outcome: 'completed', ttftMs: undefined }));
    expect(line).toEqual({ level: 'info', message: 'stream', streamId: 'abc', outcome: 'completed', timestamp: expect.any(String) });
    expect(Number.isNaN(Date.parse(line?.timestamp as string))).toBe(false);
  });

  it("passes a child logger's fields", async () => {
    const [line] = await linesOf((logger) => logger.child({ route: '/x' }).info('hello'));
    expect(line).toMatchObject({ level: 'info', message: 'hello', route: '/x' });
  });
});

describe('jsonLine', () => {
  const MESSAGE = Symbol.for('message');
  const line = (f: ReturnType<typeof jsonLine>, entry: Record<string, unknown>): string => (f.transform({ ...entry } as never, {}) as unknown as Record<symbol, string>)[MESSAGE] as string;

  it("writes what winston's json() writes, byte for byte", () => {
    const entries: Record<string, unknown>[] = [
      { level: 'info', message: 'stream', streamId: 'ab12', route: '/v1/chat/completions', attempts: 1, outcome: 'completed', durationMs: 251.3, ttftMs: undefined, status: 200 },
      { level: 'warn', message: 'quote " backslash \\ newline \n tab \t nul \u0000 del \u007f', z: true, a: false, m: null },
      { level: 'info', message: 'unicode 你好 🚀 lone \ud800 surrogate \udfff', n: -0, big: 1e21, small: 1e-7, nan: Number.NaN, inf: Number.POSITIVE_INFINITY },
      { level: 'info', message: 'keys', '10': 'ten', '2': 'two', B: 1, a: 2, _: 3, 'é': 4, 'we"ird\\key': 5, '\n': 6 },
      { level: 'info', message: 'nested', routes: ['POST /v1/chat/completions (openai)'], meta: { b: 1, a: [1, { d: 2, c: 3 }] } },
      { level: 'info', message: 'bigint', n: BigInt(12345678901234567890n) },
      { level: 'info', message: '' },
    ];
    const ours = jsonLine();
    const theirs = winston.format.json();
    // Twice: the second pass writes the keys quoted on the first.
    for (let pass = 0; pass < 2; pass++) for (const entry of entries) expect(line(ours, entry)).toBe(line(theirs, entry));
  });
});
