import { fstatSync, writeSync } from 'node:fs';
import winston from 'winston';
import type Transport from 'winston-transport';
import { ConfigError } from './config/load';

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** winston level, one of winston's npm levels (default `LOG_LEVEL`, else `info`; an empty `LOG_LEVEL` is unset). */
  level?: string | undefined;
  /** Log nothing (tests). */
  silent?: boolean | undefined;
  /** Transports instead of the default stdout lines (tests capture lines this way). */
  transports?: Transport[] | undefined;
}

/**
 * The gateway's winston logger: one JSON object per line on stdout. The per-stream line
 * (`message: "stream"`) carries the stream id, route, status, ttftMs, events, bytes, outcome and
 * error code; never prompt text, completions or keys.
 *
 * Lines leave stdout in batches: a line waits at most {@link LOG_FLUSH_MS} ms, or until
 * {@link LOG_FLUSH_BYTES} bytes of lines wait (one write per stream cost more CPU than any other
 * piece of a stream's set-up bookkeeping). They are written to stdout's descriptor directly, never
 * blocking; on a pipe in writes of whole lines of at most {@link PIPE_ATOMIC_BYTES} bytes, which
 * the kernel takes whole or not at all, and only while `process.stdout` holds nothing unwritten,
 * so neither the logger's lines nor other writers' are cut. What a full pipe does not take waits
 * in a backlog of at most {@link LOG_BACKLOG_BYTES} bytes, tried again every {@link LOG_RETRY_MS}
 * ms. While the backlog is full, new lines are dropped and counted; a `log lines dropped` line
 * (level `warn`, field `dropped`) says how many once there is room. At `process.exit` the backlog
 * and the waiting lines are written, waiting up to {@link LOG_EXIT_WAIT_MS} ms for a slow reader,
 * and so is every line logged after it; lines still unwritten then are counted on stderr. A
 * stdout whose reader is gone (`EPIPE`) costs the lines, not the process: one line on stderr says
 * so. Where stdout has no descriptor (a worker thread), lines go through `process.stdout.write`.
 *
 * Throws {@link ConfigError} for a level that is not one of winston's npm levels (`error`, `warn`,
 * `info`, `http`, `verbose`, `debug`, `silly`, lower case), which winston would take for "log
 * nothing".
 */
export function createLogger(options: LoggerOptions = {}): winston.Logger {
  const fromEnv = options.level === undefined && process.env.LOG_LEVEL !== undefined && process.env.LOG_LEVEL !== '';
  const level = options.level ?? (fromEnv ? (process.env.LOG_LEVEL as string) : 'info');
  if (!Object.hasOwn(winston.config.npm.levels, level)) {
    const levels = Object.keys(winston.config.npm.levels).join(', ');
    throw new ConfigError(`invalid log level ${JSON.stringify(level)}${fromEnv ? ' (from LOG_LEVEL)' : ''}: expected one of ${levels}`);
  }
  const lines = options.transports === undefined ? new StdoutLines() : undefined;
  if (lines !== undefined && options.silent !== true) hookProcess();
  const logger = winston.createLogger({
    level,
    silent: options.silent ?? false,
    format: winston.format.combine(winston.format.timestamp(), jsonLine()),
    transports: options.transports ?? [lines as StdoutLines],
  });
  if (lines !== undefined) writeDirectly(logger, lines);
  return logger;
}

/** winston's keys of an entry's level and formatted line (triple-beam's `LEVEL`, `MESSAGE`). */
const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');
const ignore = (): void => undefined;

/**
 * winston's `json()` format (keys sorted, as its `safe-stable-stringify` writes them), with a
 * faster way for the common entry whose values are all strings, numbers, booleans, `null` or
 * `undefined` (the per-stream line): each key and string through `JSON.stringify` (numbers,
 * booleans and `null` as it writes them), as `safe-stable-stringify` does. Any other value (an object, an array, a `BigInt`)
 * takes winston's own format.
 */
export function jsonLine(): winston.Logform.Format {
  const json = winston.format.json();
  return winston.format((info) => {
    const entry = info as unknown as Record<string | symbol, unknown>;
    const keys = Object.keys(entry).sort();
    let line = '{';
    for (const key of keys) {
      const value = entry[key];
      if (value === undefined) continue;
      let text: string;
      if (typeof value === 'string') text = JSON.stringify(value);
      else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : 'null';
      else if (typeof value === 'boolean' || value === null) text = String(value);
      else return json.transform(info, json.options);
      line += (line.length > 1 ? ',' : '') + quotedKey(key) + text;
    }
    entry[MESSAGE] = `${line}}`;
    return info;
  })();
}

/** `"key":` of the keys lines use, each quoted once (a line has about twenty, the same on every line). */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 1024;
function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = `${JSON.stringify(key)}:`;
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/**
 * Hands each entry of `logger` to its one transport `lines` directly: the level check, the
 * logger's format and the transport's `log()`, as winston's logger stream and the transport's
 * own `_write()` would, without the two object-mode streams in between (their buffering,
 * callbacks and ticks were most of a line's cost, paid once per stream). Only for the default
 * transport, which has no level or format of its own; a caller's `transports` keep winston's path.
 */
function writeDirectly(logger: winston.Logger, lines: StdoutLines): void {
  type Entry = Record<string | symbol, unknown>;
  logger.write = ((entry: Entry): boolean => {
    if (logger.silent || entry.exception === true) return true;
    const level = (entry[LEVEL] ??= entry.level) as string;
    const levels = logger.levels as Record<string, number | undefined>;
    if ((levels[level] ?? Infinity) > (levels[logger.level] ?? -Infinity)) return true;
    const line = logger.format.transform(entry as never, (logger.format as { options?: unknown }).options) as Entry | false | undefined;
    if (line) lines.log(line, ignore);
    return true;
  }) as typeof logger.write;
}

/** The gateway's logger type (winston). */
export type Logger = winston.Logger;

/** The longest a line waits before it is written to stdout, in ms. */
export const LOG_FLUSH_MS = 20;
/** Bytes of waiting lines (UTF-16 code units, about their UTF-8 size) that are written at once, without waiting for {@link LOG_FLUSH_MS}. */
export const LOG_FLUSH_BYTES = 64 * 1024;
/** Bytes of lines a full stdout pipe has not taken yet, past which new lines are dropped. */
export const LOG_BACKLOG_BYTES = 4 * 1024 * 1024;
/** How often the backlog is offered to a full pipe again, in ms. */
export const LOG_RETRY_MS = 10;
/** How long the writes at exit wait for a full pipe's reader, in ms all told, before they give the lines up. */
export const LOG_EXIT_WAIT_MS = 1000;
/** Bytes a pipe takes whole or not at all (POSIX `PIPE_BUF` on Linux): the most one write to a pipe carries. */
export const PIPE_ATOMIC_BYTES = 4096;

/** Lines waiting to be written, shared by every {@link StdoutLines}; `pendingLength` is their length in code units. */
let pending: string[] = [];
let pendingLength = 0;
let flushTimer: NodeJS.Timeout | undefined;
/** Encoded lines stdout has not taken yet (the first may be a line's tail), oldest first. */
let backlog: Buffer[] = [];
let backlogBytes = 0;
let retryTimer: NodeJS.Timeout | undefined;
/** Lines dropped while the backlog was full, not yet reported. */
let dropped = 0;
/** The process is exiting: lines are written as they come, waiting for the reader until `exitDeadline` (ms since the epoch). */
let exiting = false;
let exitDeadline = 0;
/** stdout failed (`EPIPE`: its reader is gone); nothing more is written to it. */
let stdoutBroken = false;
let hooked = false;
/** stdout's descriptor (none in a worker thread), and whether it is a pipe or a socket: found as the process is hooked. */
let stdoutFd: number | undefined;
let stdoutIsPipe = false;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Hooks the process once: the exit's write, and stdout's errors (unhandled, an `EPIPE` would end the process). */
function hookProcess(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    exiting = true;
    exitDeadline = Date.now() + LOG_EXIT_WAIT_MS;
    flushLines();
  });
  // Also makes Node open stdout, which puts a pipe in non-blocking mode: a write never stalls the event loop.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => stdoutFailed(err.code ?? err.message));
  const fd = (process.stdout as { fd?: unknown }).fd;
  if (typeof fd === 'number') {
    stdoutFd = fd;
    try {
      const stat = fstatSync(fd);
      stdoutIsPipe = stat.isFIFO() || stat.isSocket();
    } catch {
      stdoutIsPipe = true; // unknown: the careful way
    }
  }
}

function stdoutFailed(why: string): void {
  backlog = [];
  backlogBytes = 0;
  if (stdoutBroken) return;
  stdoutBroken = true;
  try {
    // Synchronous: a stderr whose reader is gone too throws here, not as an unhandled 'error' event.
    writeSync(process.stderr.fd, `tidegate: stdout failed (${why}): log lines are dropped from now on\n`);
  } catch {
    // stderr gone as well: nothing left to tell.
  }
}

/**
 * Writes the default logger's waiting lines to stdout now, not at the end of their batch
 * ({@link LOG_FLUSH_MS}): a plain `process.stdout.write` after it comes after them. What a full
 * pipe does not take stays in the backlog, in order.
 */
export function flushStdoutLines(): void {
  flushLines();
}

/**
 * Writes `line` (plain text ending in `\n`) to stdout now, after the default logger's waiting
 * lines and the same way: straight to stdout's descriptor, never blocking, kept in the backlog
 * while a pipe is full. `process.stdout.write` would run Node's stream code on stdout, a socket
 * of a kind the gateway's own sockets are not, and V8 would recompile that code, shared with
 * every client and upstream socket, for it. Without a default logger's hook on stdout (none
 * created, or a worker thread) it is `process.stdout.write`.
 */
export function writeStdoutLine(line: string): void {
  addPending(line);
  flushLines();
}

/** Adds `line` (ending in `\n`) to the lines waiting for stdout. */
function addPending(line: string): void {
  pending.push(line);
  pendingLength += line.length;
}

function flushLines(): void {
  if (flushTimer !== undefined) {
    clearTimeout(flushTimer);
    flushTimer = undefined;
  }
  if (pending.length === 0 && !exiting) return;
  const lines = pending;
  pending = [];
  pendingLength = 0;
  if (stdoutBroken) return;
  if (stdoutFd === undefined) {
    // No descriptor (a worker thread's stdout is a stream to the main thread): the stream's own way.
    if (lines.length > 0) process.stdout.write(lines.join(''));
    return;
  }
  if (backlogBytes > LOG_BACKLOG_BYTES) dropped += lines.length;
  else if (lines.length > 0) queue(lines);
  writeBacklog();
}

/** Adds `lines` to the backlog: on a pipe in chunks of whole lines of at most {@link PIPE_ATOMIC_BYTES} bytes (a longer line is a chunk of its own). */
function queue(lines: string[]): void {
  if (!stdoutIsPipe) return push(Buffer.from(lines.join('')));
  let chunk: string[] = [];
  let chunkBytes = 0;
  for (const line of lines) {
    const bytes = Buffer.byteLength(line);
    if (chunkBytes > 0 && chunkBytes + bytes > PIPE_ATOMIC_BYTES) {
      push(Buffer.from(chunk.join('')));
      chunk = [];
      chunkBytes = 0;
    }
    chunk.push(line);
    chunkBytes += bytes;
  }
  if (chunk.length > 0) push(Buffer.from(chunk.join('')));
}

function push(bytes: Buffer): void {
  backlog.push(bytes);
  backlogBytes += bytes.length;
}

/**
 * Writes the backlog to stdout until it is empty or stdout cannot take more now: the pipe is full,
 * or `process.stdout` holds another writer's bytes unwritten (a line of theirs may be half out).
 * When exiting it waits for the pipe, until {@link exitDeadline}; what is left then is counted on
 * stderr.
 */
function writeBacklog(): void {
  if (retryTimer !== undefined) {
    clearTimeout(retryTimer);
    retryTimer = undefined;
  }
  for (;;) {
    if (backlog.length === 0) {
      if (dropped === 0 || stdoutBroken) return;
      push(Buffer.from(`{"dropped":${dropped},"level":"warn","message":"log lines dropped","timestamp":"${new Date().toISOString()}"}\n`));
      dropped = 0;
    }
    const head = backlog[0] as Buffer;
    let written = 0;
    // A partial write of another writer's bytes is finished by libuv on a later turn: never cut in.
    if (!exiting && process.stdout.writableLength > 0) return retryLater();
    try {
      written = writeSync(stdoutFd as number, head);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN') return stdoutFailed(code ?? String(err));
    }
    if (written === 0) {
      if (!exiting) return retryLater();
      if (Date.now() >= exitDeadline) return unwrittenAtExit();
      Atomics.wait(pause, 0, 0, 5);
      continue;
    }
    backlogBytes -= written;
    if (written < head.length) backlog[0] = head.subarray(written);
    else backlog.shift();
  }
}

function retryLater(): void {
  retryTimer = setTimeout(writeBacklog, LOG_RETRY_MS);
  retryTimer.unref();
}

/** Says on stderr how many lines the exit could not write within {@link LOG_EXIT_WAIT_MS} ms. */
function unwrittenAtExit(): void {
  let lines = dropped;
  for (const chunk of backlog) for (const byte of chunk) if (byte === 0x0a) lines++;
  backlog = [];
  backlogBytes = 0;
  dropped = 0;
  try {
    writeSync(process.stderr.fd, `tidegate: ${lines} log lines not written: stdout's reader did not take them within ${LOG_EXIT_WAIT_MS} ms of exit\n`);
  } catch {
    // stderr gone as well.
  }
}

/** winston's transport base class (`winston.Transport`, from winston-transport; untyped on winston). */
const TransportBase = (winston as unknown as { Transport: typeof Transport }).Transport;

/** A winston transport writing its lines to stdout in batches (see {@link createLogger}). */
class StdoutLines extends TransportBase {
  override log(info: unknown, next: () => void): void {
    hookProcess();
    addPending(`${String((info as Record<symbol, unknown>)[MESSAGE])}\n`);
    if (exiting || pendingLength >= LOG_FLUSH_BYTES) flushLines();
    else if (flushTimer === undefined) {
      // Unref'd: lines still waiting when the process ends are written by the 'exit' hook.
      flushTimer = setTimeout(flushLines, LOG_FLUSH_MS);
      flushTimer.unref();
    }
    next();
  }
}
