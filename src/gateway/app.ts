import express, { type Express, type Request } from 'express';
import { ByteBudget } from '../flow/budget';
import type { SendFlowOptions } from '../express/bridge';
import type { GatewayConfig } from './config';
import type { Logger } from './logger';
import { relaySse } from './relay';

/** What {@link createGatewayApp} needs besides the config. */
export interface GatewayDeps {
  logger: Logger;
  /** The upstream base URL actually used (config or the embedded simulator). */
  upstreamUrl: string;
}

/**
 * The gateway as an Express app: `POST /v1/chat/completions` relays an OpenAI-compatible
 * upstream stream through the demand bridge; `GET /healthz` answers `ok`.
 */
export function createGatewayApp(config: GatewayConfig, deps: GatewayDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  const streamOptions = (): SendFlowOptions => ({
    prefetch: config.stream.prefetch,
    budget: new ByteBudget(config.stream.maxBufferedBytes),
    stallTimeoutMs: config.stream.stallTimeoutMs,
    heartbeatMs: config.stream.heartbeatMs,
  });
  const upstreamHeaders = (): Record<string, string> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (config.upstream.apiKey) headers.authorization = `Bearer ${config.upstream.apiKey}`;
    return headers;
  };
  app.post('/v1/chat/completions', express.json({ limit: '4mb' }), (req: Request, res) => {
    void relaySse(req, res, {
      route: 'openai.chat',
      logger: deps.logger,
      stream: streamOptions(),
      maxEventBytes: config.stream.maxEventBytes,
      upstream: (r) => ({
        url: new URL('v1/chat/completions', withSlash(deps.upstreamUrl)).toString(),
        method: 'POST',
        headers: upstreamHeaders(),
        body: JSON.stringify(r.body),
      }),
    });
  });
  return app;
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
