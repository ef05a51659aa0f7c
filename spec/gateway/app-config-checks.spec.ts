import { createGatewayApp } from '../../src/gateway/app';
import { ConfigError, parseConfig, type GatewayConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';

const logger = createLogger({ silent: true });

describe('createGatewayApp refuses a configuration it cannot serve as meant', () => {
  it('refuses a raw, unvalidated configuration object with a ConfigError', () => {
    const raw = { upstream: { url: 'http://127.0.0.1:1' } } as unknown as GatewayConfig;
    expect(() => createGatewayApp(raw, { logger })).toThrow(ConfigError);
    expect(() => createGatewayApp(raw, { logger })).toThrow(/validated configuration: pass parseConfig\(yourConfig\) or loadConfig\(\)/);
  });

  it('refuses routes without an upstream URL with a ConfigError naming the first', () => {
    const run = (): unknown => createGatewayApp(parseConfig({}), { logger });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(/^route \/v1\/chat\/completions: no upstream URL \(set upstream\.url or the route's url\)$/);
  });

  it('refuses a policy function keyed by a path no route has, naming it and the routes', () => {
    const config = parseConfig({ upstream: { url: 'http://127.0.0.1:1' }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
    const run = (): unknown => createGatewayApp(config, { logger, policies: { '/v1/chat/completion': (events) => events } });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(/^policies for \/v1\/chat\/completion: no route has that path \(routes: \/v1\/chat\/completions\)$/);
  });

  it('accepts a policy for a route it serves', () => {
    const config = parseConfig({ upstream: { url: 'http://127.0.0.1:1' }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
    const app = createGatewayApp(config, { logger, policies: { '/v1/chat/completions': (events) => events } });
    expect(typeof app.gateway.drain).toBe('function');
  });
});
