import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSimulator, type Simulator } from '../simulator';
import { createGatewayApp } from './app';
import type { GatewayConfig } from './config';
import { createLogger, type Logger } from './logger';

/** A running gateway. */
export interface RunningGateway {
  /** `http://host:port` of the gateway. */
  url: string;
  port: number;
  /** The upstream in use: the configured one, or the embedded simulator's URL. */
  upstreamUrl: string;
  server: Server;
  /** The embedded simulator, when no upstream URL was configured. */
  simulator?: Simulator;
  /** Stops accepting, ends streams, stops the embedded simulator. */
  close(): Promise<void>;
}

/**
 * Starts the standalone gateway: the embedded simulated upstream when `config.upstream.url` is
 * absent, then the HTTP server on `config.host:config.port` (port 0 = ephemeral).
 */
export async function startGateway(config: GatewayConfig, options: { logger?: Logger } = {}): Promise<RunningGateway> {
  const logger = options.logger ?? createLogger();
  let upstreamUrl = config.upstream.url;
  let simulator: Simulator | undefined;
  if (upstreamUrl === undefined) {
    simulator = createSimulator({ tokensPerSecond: config.simulator.tokensPerSecond, ttftMs: config.simulator.ttftMs });
    const sim = await simulator.listen(0, '127.0.0.1');
    upstreamUrl = sim.url;
    logger.info('simulator started', { url: upstreamUrl });
  }
  const app = createGatewayApp(config, { logger, upstreamUrl });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host}:${port}`;
  logger.info('gateway listening', { url, upstream: config.upstream.url ? 'configured' : 'simulator' });
  return {
    url,
    port,
    upstreamUrl,
    server,
    simulator,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await simulator?.close();
    },
  };
}
