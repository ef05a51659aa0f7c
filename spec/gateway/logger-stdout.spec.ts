import { spawn } from 'node:child_process';
import path from 'node:path';

const LOGGER = path.join(__dirname, '../../dist/gateway/logger.js');

/**
 * Runs `script` in a node process with the built logger as `createLogger`. Its stdout is a pipe
 * this side reads only once `read()` is called (until then the pipe fills); `text()` is what was
 * read.
 */
function child(script: string): { stdout: NodeJS.ReadableStream & { destroy(): void }; stderrStream: { destroy(): void }; read(): void; text(): string; stderr: () => string; exit: Promise<number | null>; ended: Promise<void> } {
  const proc = spawn(process.execPath, ['-e', `const { createLogger } = require(${JSON.stringify(LOGGER)});\n${script}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  // A listener from the start, paused: Node would otherwise drain an unread pipe once the child exits.
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stdout.pause();
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const ended = new Promise<void>((resolve) => proc.stdout.once('end', () => resolve()));
  return { stdout: proc.stdout, stderrStream: proc.stderr, read: () => proc.stdout.resume(), text: () => out, stderr: () => err, exit: new Promise((resolve) => proc.on('exit', resolve)), ended };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A child that logs 3,000 lines of ~300 bytes (about 0.9 MB, many pipe buffers) in one turn, then exits. */
const LOG_3000_AND_EXIT = `
  const logger = createLogger();
  for (let i = 0; i < 3000; i++) logger.info('line', { i, filler: 'x'.repeat(250) });
  process.exit(0);
`;

/** Starts reading `c`'s stdout after `readAfterMs`, and resolves once it exited, with the lines it wrote (each ended by a newline). */
async function linesAfterExit(c: ReturnType<typeof child>, readAfterMs: number): Promise<string[]> {
  await sleep(readAfterMs);
  c.read();
  await c.exit;
  await c.ended;
  const lines = c.text().split('\n');
  expect(lines.pop()).toBe('');
  return lines;
}

describe('the default logger on a stdout pipe', () => {
  it('keeps the process running when the pipe reader leaves (EPIPE), saying so once on stderr', async () => {
    // Logs a line every 5 ms for 400 ms, then prints a marker on stderr and exits 0.
    const c = child(`
      const logger = createLogger();
      const t = setInterval(() => logger.info('tick'), 5);
      setTimeout(() => { clearInterval(t); process.stderr.write('survived\\n'); process.exit(0); }, 400);
    `);
    await new Promise<void>((resolve) => {
      c.stdout.once('data', () => resolve());
      c.read();
    });
    c.stdout.destroy();
    expect(await c.exit).toBe(0);
    expect(c.stderr()).toMatch(/stdout failed \(EPIPE\): log lines are dropped from now on\n/);
    expect(c.stderr().match(/stdout failed/g)).toHaveLength(1);
    expect(c.stderr()).toContain('survived');
  });

  it('keeps the process running when the readers of both stdout and stderr leave', async () => {
    const c = child(`
      const logger = createLogger();
      const t = setInterval(() => logger.info('tick'), 5);
      setTimeout(() => { clearInterval(t); process.exit(0); }, 400);
    `);
    await new Promise<void>((resolve) => {
      c.stdout.once('data', () => resolve());
      c.read();
    });
    c.stderrStream.destroy();
    c.stdout.destroy();
    expect(await c.exit).toBe(0);
  });

  it('writes every waiting line at exit, whole, to a reader slower than the pipe', async () => {
    const lines = await linesAfterExit(child(LOG_3000_AND_EXIT), 300);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).toEqual([...Array(3000).keys()]);
  });

  it("never cuts another writer's lines, nor its own, behind a slow reader", async () => {
    // The logger's lines (~300 B) and, every tenth, one of the process's own through
    // process.stdout, while the reader takes nothing for 500 ms; the process then ends on its own.
    const c = child(`
      const logger = createLogger();
      let i = 0;
      const step = () => {
        for (let k = 0; k < 50 && i < 3000; k++, i++) {
          logger.info('stream', { i, streamId: 'x'.repeat(200) });
          if (i % 10 === 0) process.stdout.write('EMB ' + i + ' ' + 'b'.repeat(80) + ' END\\n');
        }
        if (i < 3000) setTimeout(step, 5);
        else setTimeout(() => undefined, 1500);
      };
      step();
    `);
    await sleep(500);
    c.read();
    expect(await c.exit).toBe(0);
    await c.ended;
    const lines = c.text().split('\n');
    expect(lines.pop()).toBe('');
    const cut = lines.filter((l) => !/^EMB \d+ b{80} END$/.test(l) && !/^\{.*\}$/.test(l));
    expect(cut).toEqual([]);
    const logged = lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { i: number }).i);
    expect(logged).toEqual([...Array(3000).keys()]);
    expect(lines.filter((l) => l.startsWith('EMB'))).toHaveLength(300);
  }, 20_000);

  it('writes only whole lines at exit to a reader slower than LOG_EXIT_WAIT_MS, and counts the rest on stderr', async () => {
    const c = child(LOG_3000_AND_EXIT);
    const lines = await linesAfterExit(c, 2000);
    const got = lines.map((l) => (JSON.parse(l) as { i: number }).i);
    expect(got).toEqual([...Array(got.length).keys()]);
    const told = /tidegate: (\d+) log lines not written: stdout's reader did not take them within 1000 ms of exit\n/.exec(c.stderr());
    expect(told).not.toBeNull();
    expect(got.length + Number(told?.[1])).toBe(3000);
  }, 10_000);

  it('writes a plain line after the lines waiting before it, by its own writes, not process.stdout.write', async () => {
    const c = child(`
      const { writeStdoutLine } = require(${JSON.stringify(LOGGER)});
      const logger = createLogger();
      let streamWrites = 0;
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = (...args) => { streamWrites++; return write(...args); };
      for (let i = 0; i < 3; i++) logger.info('before', { i });
      writeStdoutLine('a plain line\\n');
      logger.info('after', { i: 3 });
      setTimeout(() => { process.stderr.write('stream writes: ' + streamWrites + '\\n'); process.exit(0); }, 100);
    `);
    c.read();
    expect(await c.exit).toBe(0);
    await c.ended;
    const lines = c.text().split('\n').filter(Boolean);
    expect(lines.map((l) => (l.startsWith('{') ? (JSON.parse(l) as { message: string; i: number }).i : l))).toEqual([0, 1, 2, 'a plain line', 3]);
    expect(c.stderr()).toBe('stream writes: 0\n');
  });

  it('writes its lines through process.stdout in a worker thread, which has no descriptor', async () => {
    const c = child(`
      const { Worker } = require('node:worker_threads');
      new Worker(\`
        const { createLogger } = require(\${JSON.stringify(${JSON.stringify(LOGGER)})});
        const logger = createLogger();
        for (let i = 0; i < 3; i++) logger.info('from a worker', { i });
      \`, { eval: true });
    `);
    c.read();
    expect(await c.exit).toBe(0);
    await c.ended;
    expect(c.text().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { i: number }).i)).toEqual([0, 1, 2]);
  });

  it('writes the lines logged during exit, after the exit hook', async () => {
    const c = child(`
      const logger = createLogger();
      logger.info('first');
      process.on('exit', () => logger.info('from a later exit hook'));
      process.exit(0);
    `);
    c.read();
    await c.exit;
    await c.ended;
    expect(c.text().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(['first', 'from a later exit hook']);
  });

  it('drops lines while the pipe holds LOG_BACKLOG_BYTES unwritten, then counts them in one warn line', async () => {
    // The reader reads nothing for 1.5 s while the process logs ~6 MB; then everything is read.
    const c = child(`
      const { LOG_BACKLOG_BYTES } = require(${JSON.stringify(LOGGER)});
      const logger = createLogger();
      let i = 0;
      const t = setInterval(() => {
        for (let k = 0; k < 200; k++) logger.info('line', { i: i++, filler: 'x'.repeat(1000) });
        if (i >= 6000) { clearInterval(t); setTimeout(() => { logger.info('last', { i: i++ }); setTimeout(() => process.exit(0), 3000); }, 1500); }
      }, 10);
    `);
    await sleep(1500);
    c.read();
    await c.exit;
    await c.ended;
    const lines = c.text().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { i?: number; message: string; dropped?: number; level: string });
    const notices = lines.filter((l) => l.message === 'log lines dropped');
    const logged = lines.filter((l) => l.i !== undefined);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ level: 'warn' });
    // Every line is either written or counted as dropped, and the written ones keep their order.
    expect(logged.length + (notices[0]?.dropped ?? 0)).toBe(6001);
    expect(notices[0]?.dropped).toBeGreaterThan(0);
    const order = logged.map((l) => l.i as number);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(logged[logged.length - 1]?.message).toBe('last');
  }, 20_000);
});
