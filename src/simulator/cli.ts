#!/usr/bin/env node
/**
 * Standalone simulated upstream (the `simulator` service of docker-compose.yml).
 *
 *   node dist/simulator/cli.js [--port 9090] [--host 127.0.0.1] [--tokens-per-second 50]
 *                              [--ttft-ms 300] [--fault none] [--default-transcript sim]
 *
 * Environment fallbacks: SIM_PORT, SIM_HOST, SIM_TOKENS_PER_SECOND, SIM_TTFT_MS, SIM_FAULT.
 * Logs one JSON line per request to stdout; SIGINT/SIGTERM close it.
 */
import { parseArgs } from 'node:util';
import { parseFault } from './faults';
import { createSimulator } from './server';

function num(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^infinity$/i.test(value) ? Infinity : Number(value);
  if (value.trim() === '' || Number.isNaN(n)) throw new Error(`--${name} must be a number, got ${JSON.stringify(value)}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'tokens-per-second': { type: 'string' },
      'ttft-ms': { type: 'string' },
      fault: { type: 'string' },
      'default-transcript': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: node dist/simulator/cli.js [--port 9090] [--host 127.0.0.1] [--tokens-per-second 50] [--ttft-ms 300] [--fault none] [--default-transcript sim]\n',
    );
    return;
  }
  const env = process.env;
  const faultText = values.fault ?? env.SIM_FAULT;
  const fault = faultText === undefined ? undefined : parseFault(faultText);
  if (faultText !== undefined && fault === undefined) throw new Error(`unknown fault ${JSON.stringify(faultText)}`);

  const sim = createSimulator({
    tokensPerSecond: num('tokens-per-second', values['tokens-per-second'] ?? env.SIM_TOKENS_PER_SECOND),
    ttftMs: num('ttft-ms', values['ttft-ms'] ?? env.SIM_TTFT_MS),
    fault,
    defaultTranscript: values['default-transcript'],
  });
  sim.on('request-end', (r) => {
    process.stdout.write(
      `${JSON.stringify({
        level: 'info',
        message: 'simulated request',
        id: r.id,
        route: r.route,
        model: r.model,
        transcript: r.transcript,
        stream: r.stream,
        fault: r.fault,
        status: r.status,
        outcome: r.outcome,
        tokens: r.tokensWritten,
        bytes: r.bytesWritten,
        drainWaits: r.drainWaits,
        durationMs: (r.endedAt ?? Date.now()) - r.startedAt,
      })}\n`,
    );
  });
  const port = num('port', values.port ?? env.SIM_PORT) ?? 9090;
  const { url } = await sim.listen(port, values.host ?? env.SIM_HOST ?? '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ level: 'info', message: 'simulator listening', url })}\n`);

  const stop = (): void => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`simulator: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
