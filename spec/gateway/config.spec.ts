import { ConfigError, loadConfig, parseConfig, resolveRoutes } from '../../src/gateway/config';

describe('gateway config', () => {
  it('defaults to the OpenAI and Anthropic routes with the documented policy', () => {
    const routes = resolveRoutes(parseConfig({}), 'http://up:1');
    expect(routes.map((r) => [r.path, r.provider, r.url])).toEqual([
      ['/v1/chat/completions', 'openai', 'http://up:1/v1/chat/completions'],
      ['/v1/messages', 'anthropic', 'http://up:1/v1/messages'],
    ]);
    expect(routes[0].policy).toMatchObject({ overflow: 'pause', maxBufferedBytes: 262144, heartbeatMs: 15000, stallTimeoutMs: 30000 });
    expect(routes[0].timeouts).toEqual({ connectMs: 10000, firstByteMs: 60000, idleMs: 120000, totalMs: 600000 });
  });

  it('lets a route override the global policy, which overrides the defaults', () => {
    const config = parseConfig({
      stream: { overflow: 'terminate', maxBufferedBytes: 65536 },
      routes: [{ path: '/a', provider: 'passthrough', url: 'http://x/a', policy: { maxBufferedBytes: 4096 } }],
    });
    expect(resolveRoutes(config, undefined)[0].policy).toMatchObject({ overflow: 'terminate', maxBufferedBytes: 4096, prefetch: 16 });
  });

  it('applies environment over the file values and flags over the environment', () => {
    const config = loadConfig({
      env: { PORT: '9000', UPSTREAM_URL: 'http://env:1', TIDEGATE_OVERFLOW: 'terminate' },
      overrides: { port: 9100 },
    });
    expect(config.port).toBe(9100);
    expect(config.upstream.url).toBe('http://env:1');
    expect(config.stream.overflow).toBe('terminate');
  });

  it('names the bad field in the error', () => {
    expect(() => parseConfig({ timeouts: { idleMs: -1 } })).toThrow(ConfigError);
    expect(() => parseConfig({ timeouts: { idleMs: -1 } })).toThrow(/timeouts\.idleMs/);
    expect(() => loadConfig({ env: { PORT: 'eighty' } })).toThrow(/port/);
  });

  it('appends extra passthrough routes to the default ones', () => {
    const config = loadConfig({ extraRoutes: [{ path: '/sse', provider: 'passthrough', url: 'http://u/sse' }] });
    expect(resolveRoutes(config, 'http://up').map((r) => `${r.methods.join('|')} ${r.path}`)).toEqual([
      'POST /v1/chat/completions',
      'POST /v1/messages',
      'GET|POST /sse',
    ]);
  });
});
