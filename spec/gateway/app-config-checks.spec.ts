import { createGatewayApp } from '../../src/gateway/app';
import { ConfigError, loadConfig, parseConfig, type GatewayConfig } from '../../src/gateway/config';
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

  it('refuses two routes answering one method on one path, naming both providers', () => {
    const config = parseConfig({
      upstream: { url: 'http://127.0.0.1:1' },
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/chat/completions', provider: 'passthrough' },
      ],
    });
    const run = (): unknown => createGatewayApp(config, { logger });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(/^routes: two routes answer POST \/v1\/chat\/completions \(openai and passthrough\); only the first would be served/);
  });

  it('refuses a --passthrough route on a default route\'s path', () => {
    const config = loadConfig({ env: {}, overrides: { 'upstream.url': 'http://127.0.0.1:1' }, extraRoutes: [{ path: '/v1/messages', provider: 'passthrough', url: 'http://127.0.0.1:2/sse' }] });
    expect(() => createGatewayApp(config, { logger })).toThrow(/^routes: two routes answer POST \/v1\/messages \(anthropic and passthrough\)/);
  });

  it('accepts routes on one path that answer different methods', () => {
    const config = parseConfig({
      upstream: { url: 'http://127.0.0.1:1' },
      routes: [
        { path: '/events', provider: 'passthrough', methods: ['GET'] },
        { path: '/events', provider: 'passthrough', methods: ['POST'], url: 'http://127.0.0.1:2/other' },
      ],
    });
    expect(typeof createGatewayApp(config, { logger }).gateway.drain).toBe('function');
  });

  it('accepts a policy for a route it serves', () => {
    const config = parseConfig({ upstream: { url: 'http://127.0.0.1:1' }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
    const app = createGatewayApp(config, { logger, policies: { '/v1/chat/completions': (events) => events } });
    expect(typeof app.gateway.drain).toBe('function');
  });
});
