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
 * {@link LOG_FLUSH_BYTES} bytes of lines wait, and all are written at `process.exit`. On a pipe
 * each write is a synchronous syscall that also wakes the reader, and one per stream cost more
 * CPU than any other piece of a stream's set-up bookkeeping.
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

/** Lines waiting to be written, shared by every {@link StdoutLines}; `pendingLength` is their length in code units. */
let pending: string[] = [];
let pendingLength = 0;
let flushTimer: NodeJS.Timeout | undefined;
let exitHooked = false;

function flushLines(): void {
  if (flushTimer !== undefined) {
    clearTimeout(flushTimer);
    flushTimer = undefined;
  }
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  pendingLength = 0;
  process.stdout.write(text);
}

/** winston's transport base class (`winston.Transport`, from winston-transport; untyped on winston). */
const TransportBase = (winston as unknown as { Transport: typeof Transport }).Transport;

/** A winston transport writing its lines to stdout in batches (see {@link createLogger}). */
class StdoutLines extends TransportBase {
  override log(info: unknown, next: () => void): void {
    const line = `${String((info as Record<symbol, unknown>)[MESSAGE])}\n`;
    pending.push(line);
    pendingLength += line.length;
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', flushLines);
    }
    if (pendingLength >= LOG_FLUSH_BYTES) flushLines();
    else if (flushTimer === undefined) {
      // Unref'd: lines still waiting when the process ends are written by the 'exit' hook.
      flushTimer = setTimeout(flushLines, LOG_FLUSH_MS);
      flushTimer.unref();
    }
    next();
  }
}
