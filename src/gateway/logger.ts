import winston from 'winston';
import type Transport from 'winston-transport';

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** winston level (default `LOG_LEVEL` or `info`). */
  level?: string | undefined;
  /** Log nothing (tests). */
  silent?: boolean | undefined;
  /** Transports instead of the default stdout Console (tests capture lines this way). */
  transports?: Transport[] | undefined;
}

/**
 * The gateway's winston logger: one JSON object per line on stdout. The per-stream line
 * (`message: "stream"`) carries the stream id, route, status, ttftMs, events, bytes, outcome and
 * error code; never prompt text, completions or keys.
 */
export function createLogger(options: LoggerOptions = {}): winston.Logger {
  return winston.createLogger({
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    silent: options.silent ?? false,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: options.transports ?? [new winston.transports.Console()],
  });
}

/** The gateway's logger type (winston). */
export type Logger = winston.Logger;
