#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, parseConfig } from './config';
import { createLogger } from './logger';
import { startGateway } from './server';

/** `tidegate` command line: flags override environment, environment overrides defaults. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      upstream: { type: 'string' },
    },
  });
  const env = process.env;
  const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  const raw = {
    port: num(values.port ?? env.PORT),
    host: values.host ?? env.HOST,
    upstream: { url: values.upstream ?? env.UPSTREAM_URL, apiKey: env.UPSTREAM_API_KEY },
  };
  const logger = createLogger();
  const config = parseConfig(raw);
  const gateway = await startGateway(config, { logger });
  process.stdout.write(`tidegate listening on ${gateway.url} (upstream: ${gateway.upstreamUrl})\n`);
  const stop = (): void => {
    void gateway.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`tidegate: ${err instanceof ConfigError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
