#!/usr/bin/env node
import { releaseEarlySignals } from './early-signals'; // first: see its module comment
import { parseArgs } from 'node:util';
import { redactUrlAsGiven } from '../http/redact';
import { API_SPECS, ConfigError, DEFAULT_APIS, DEFAULT_WARMUP_STREAMS, loadConfig } from './config';
import { ENV_OVERRIDES, parseDecimal } from './config/env';
import { createLogger, flushStdoutLines, writeStdoutLine } from './logger';
import { startGateway } from './server';

/** The flags' lines of --help; a line that names an environment variable ("also PORT") is its only mention. */
const FLAG_LINES = `  --config FILE              YAML or JSON configuration (also TIDEGATE_CONFIG)
  --port N                   listening port (also PORT; default 8080, 0 = ephemeral)
  --host H                   listening address (also HOST; default 127.0.0.1)
  --upstream URL             upstream base URL (also UPSTREAM_URL; default: embedded simulator)
  --passthrough /path=URL    relay GET and POST on /path to the SSE upstream URL (repeatable)
  --max-buffered-bytes N     per-stream byte budget (default 262144)
  --stall-timeout-ms N       end a stream whose client reads nothing for N ms (default 30000)
  --overflow pause|terminate pause the upstream (default) or end the stream when the budget is spent
  --relay bytes|events       forward the upstream's event bytes (default) or decode and re-encode each event
  --heartbeat-ms N           ": ping" after N ms of silence (default 15000)
  --kernel-unsent-bytes N    unsent bytes the kernel keeps per client socket (default 16384, at most a quarter of the budget; 0 = kernel's)
  --kernel-receive-bytes N   receive buffer of each upstream socket (default 65536; 0 = kernel's)
  --shutdown-grace-ms N      on SIGTERM or SIGINT, let streams finish for N ms (default 10000)
  --warmup-streams N         streams relayed through the routes before listening (default ${DEFAULT_WARMUP_STREAMS}; 0 = none)
  --cors-origin ORIGIN       let pages on ORIGIN call the gateway (repeatable, * for any; also TIDEGATE_CORS_ORIGINS=a,b)
  --debug-streams            serve GET /debug/streams: each live stream's demand and buffers
  --playground               serve /playground on any address (default: only on a loopback host)
  -h, --help                 this text`;

/** Every environment variable the gateway reads, and what it sets. */
const ENV_VARS: ReadonlyArray<readonly [name: string, sets: string]> = [
  ['TIDEGATE_CONFIG', 'the configuration file'],
  ...Object.entries(ENV_OVERRIDES),
  ['LOG_LEVEL', 'log level, lower case: error, warn, info (default), http, verbose, debug, silly'],
  ['TIDEGATE_SOCKET_OPTIONS', 'socket options addon: off, or the path of another build'],
];

/** Whether a flag's line names `name` (as a whole word: PORT is not in TIDEGATE_PORTS). */
const flagLineNames = (name: string): boolean => new RegExp(`(?<![A-Z0-9_])${name}(?![A-Z0-9_])`).test(FLAG_LINES);

const USAGE = `Usage: tidegate [options]

${FLAG_LINES}

Environment (each sets the configuration key or what is written beside it; a flag overrides the environment):
${ENV_VARS.filter(([name]) => !flagLineNames(name))
  .map(([name, sets]) => `  ${name.padEnd(31)}${sets}`)
  .join('\n')}

Routes served by default (each forwards to the same path on the upstream):
${DEFAULT_APIS.map((api) => `  ${`${API_SPECS[api].methods.join('|').padEnd(4)} ${API_SPECS[api].path}`.padEnd(35)}${API_SPECS[api].summary}`).join('\n')}
  GET  /healthz, /readyz, /metrics   health, readiness, Prometheus metrics
  GET  /playground                   the backpressure playground (loopback hosts; see --playground)
`;

/** `tidegate` command line: flags override environment, environment overrides the file, the file overrides defaults. */
async function main(): Promise<void> {
  const { values } = parseFlags();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const num = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = parseDecimal(v);
    if (n === undefined) throw new ConfigError(`invalid --${flag}: expected a decimal number, got ${JSON.stringify(v)}`);
    return n;
  };
  const extraRoutes = (values.passthrough ?? []).map((spec) => {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new ConfigError(`invalid --passthrough ${JSON.stringify(spec)}: expected /path=URL`);
    return { path: spec.slice(0, eq), provider: 'passthrough', url: spec.slice(eq + 1) };
  });
  // Each flag's field, and its value as given (a number still a string: num() checks it first).
  const flagged: ReadonlyArray<readonly [field: string, flag: string, value: string | number | boolean | readonly string[] | undefined]> = [
    ['port', 'port', num('port', values.port)],
    ['host', 'host', values.host],
    ['upstream.url', 'upstream', values.upstream],
    ['stream.maxBufferedBytes', 'max-buffered-bytes', num('max-buffered-bytes', values['max-buffered-bytes'])],
    ['stream.stallTimeoutMs', 'stall-timeout-ms', num('stall-timeout-ms', values['stall-timeout-ms'])],
    ['stream.overflow', 'overflow', values.overflow],
    ['stream.relay', 'relay', values.relay],
    ['stream.heartbeatMs', 'heartbeat-ms', num('heartbeat-ms', values['heartbeat-ms'])],
    ['stream.kernelUnsentBytes', 'kernel-unsent-bytes', num('kernel-unsent-bytes', values['kernel-unsent-bytes'])],
    ['upstream.kernelReceiveBytes', 'kernel-receive-bytes', num('kernel-receive-bytes', values['kernel-receive-bytes'])],
    ['shutdown.graceMs', 'shutdown-grace-ms', num('shutdown-grace-ms', values['shutdown-grace-ms'])],
    ['warmup.streams', 'warmup-streams', num('warmup-streams', values['warmup-streams'])],
    ['cors.origins', 'cors-origin', values['cors-origin']],
    ['debug.streams', 'debug-streams', values['debug-streams'] ? true : undefined],
    ['playground.enabled', 'playground', values.playground ? true : undefined],
  ];
  const config = loadConfig({
    file: values.config ?? process.env.TIDEGATE_CONFIG,
    env: process.env,
    overrides: Object.fromEntries(flagged.map(([field, , value]) => [field, value])),
    // An error names a flag's value as typed (`--port 1e20`), not as converted.
    overrideOrigins: Object.fromEntries(flagged.flatMap(([field, flag, value]) => (value === undefined ? [] : [[field, flagOrigin(flag, (values as Record<string, typeof value>)[flag] ?? value)]]))),
    extraRoutes,
  });
  const logger = createLogger();
  // A signal before the gateway listens (during the warm-up): no client has been served, so
  // there is nothing to drain. The process says so and exits as a drained shutdown does.
  const beforeListening = (signal: NodeJS.Signals): void => {
    logger.silent = false; // the warm-up silences it
    logger.info('shutdown requested before listening', { signal });
    flushStdoutLines();
    process.exit(0);
  };
  process.on('SIGTERM', beforeListening);
  process.on('SIGINT', beforeListening);
  releaseEarlySignals();
  const gateway = await startGateway({ ...config, warmup: { streams: config.warmup.streams ?? DEFAULT_WARMUP_STREAMS } }, { logger });
  let firstSignalAt: number | undefined;
  const stop = (signal: NodeJS.Signals): void => {
    if (firstSignalAt !== undefined) {
      // One Ctrl-C reaches node twice under `npm start` (the terminal signals the whole process
      // group and npm forwards its own copy), and so does a signal to a group or cgroup (systemd).
      // Copies that arrive together are one request; a later one is a deliberate second Ctrl-C.
      const sinceMs = Date.now() - firstSignalAt;
      if (sinceMs < SIGNAL_REPEAT_WINDOW_MS) {
        logger.info('shutdown already requested', { signal, sinceMs });
        return;
      }
      logger.info('second shutdown signal: exiting now', { signal });
      process.exit(1);
    }
    firstSignalAt = Date.now();
    logger.info('shutdown requested', { signal, graceMs: config.shutdown.graceMs });
    gateway.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`tidegate: shutdown failed: ${(err as Error).stack ?? String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // Added before the handlers above are removed: a signal's last listener going closes Node's
  // watch of it, and a signal that arrived but was not dispatched yet would be lost with it.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.off('SIGTERM', beforeListening);
  process.off('SIGINT', beforeListening);
  // The one plain-text line (README's quick start quotes it), printed once a signal drains: a
  // supervisor that signals as soon as it reads the line gets the drain, not node's default kill.
  // Userinfo and query values of the upstream URL are credentials: never printed.
  const upstream = gateway.simulator === undefined ? redactUrlAsGiven(gateway.upstreamUrl) : 'embedded simulator';
  // After the JSON lines logged before it (warm-up, listening), by the logger's own writes.
  writeStdoutLine(`tidegate listening on ${gateway.url} (upstream: ${upstream})\n`);
}

/** A signal within this long of the first is a copy of it (see `stop` in `main`), not a second Ctrl-C. */
const SIGNAL_REPEAT_WINDOW_MS = 1000;

/** Parses the flags; an unknown or malformed flag is a {@link ConfigError} pointing at `--help`. */
/** How a flag was given, for an error that names it: `--overflow drop`, `--debug-streams`. */
function flagOrigin(flag: string, value: string | number | boolean | readonly string[]): string {
  if (value === true) return `--${flag}`;
  if (Array.isArray(value)) return value.map((v) => `--${flag} ${String(v)}`).join(' ');
  return `--${flag} ${String(value)}`;
}

function parseFlags() {
  try {
    return parseArgs({
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        upstream: { type: 'string' },
        passthrough: { type: 'string', multiple: true },
        'max-buffered-bytes': { type: 'string' },
        'stall-timeout-ms': { type: 'string' },
        overflow: { type: 'string' },
        relay: { type: 'string' },
        'heartbeat-ms': { type: 'string' },
        'kernel-unsent-bytes': { type: 'string' },
        'kernel-receive-bytes': { type: 'string' },
        'shutdown-grace-ms': { type: 'string' },
        'warmup-streams': { type: 'string' },
        'cors-origin': { type: 'string', multiple: true },
        'debug-streams': { type: 'boolean' },
        playground: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new ConfigError(`${(err as Error).message} (see tidegate --help)`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`tidegate: ${describeStartError(err)}\n`);
  process.exit(1);
});

/** A one-line reason for the errors a user causes (config, a busy or forbidden port); a stack for the rest. */
function describeStartError(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.syscall === 'listen' && (e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL')) {
    const reason = e.code === 'EADDRINUSE' ? 'address already in use' : e.code === 'EACCES' ? 'permission denied' : 'address not available';
    // An IPv6 address in brackets, as in a URL: `[::1]:8080`.
    const address = e.address === undefined ? '?' : e.address.includes(':') ? `[${e.address}]` : e.address;
    return `cannot listen on ${address}:${e.port ?? '?'}: ${reason} (choose another with --port / PORT or --host / HOST)`;
  }
  // A host that does not resolve: the listener looks it up before it binds.
  if (e?.syscall === 'getaddrinfo') return `cannot listen on ${JSON.stringify((e as { hostname?: string }).hostname ?? '?')}: no such host (${e.code ?? 'getaddrinfo'}; choose another with --host / HOST)`;
  return (err as Error)?.stack ?? String(err);
}
