import winston from 'winston';

/**
 * The gateway's winston logger: one JSON object per line on stdout. Logs carry stream ids,
 * routes, timings and byte counts; never prompt text, completions or keys.
 *
 * @param level winston level (default `LOG_LEVEL` or `info`); `silent: true` for tests.
 */
export function createLogger(options: { level?: string; silent?: boolean } = {}): winston.Logger {
  return winston.createLogger({
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    silent: options.silent ?? false,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}

export type Logger = winston.Logger;
