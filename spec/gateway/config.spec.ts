import { ConfigError, loadConfig, parseConfig, parseDecimal, resolveRoutes } from '../../src/gateway/config';

describe('gateway config', () => {
  it('defaults to the OpenAI and Anthropic routes with the documented policy', () => {
    const routes = resolveRoutes(parseConfig({}), 'http://up:1');
    expect(routes.map((r) => [r.path, r.provider, r.api, r.url])).toEqual([
      ['/v1/chat/completions', 'openai', 'chat', 'http://up:1/v1/chat/completions'],
      ['/v1/responses', 'openai', 'responses', 'http://up:1/v1/responses'],
      ['/v1/completions', 'openai', 'completions', 'http://up:1/v1/completions'],
      ['/v1/models', 'openai', 'models', 'http://up:1/v1/models'],
      ['/v1/embeddings', 'openai', 'embeddings', 'http://up:1/v1/embeddings'],
      ['/v1/messages', 'anthropic', 'messages', 'http://up:1/v1/messages'],
      ['/v1/messages/count_tokens', 'anthropic', 'count_tokens', 'http://up:1/v1/messages/count_tokens'],
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

  it('reads numbers from the environment in decimal only, refusing hex, binary, octal and infinite spellings', () => {
    expect(loadConfig({ env: { TIDEGATE_WARMUP_STREAMS: ' 16 ', PORT: '08080' } })).toMatchObject({ warmup: { streams: 16 }, port: 8080 });
    expect(loadConfig({ env: { TIDEGATE_STALL_TIMEOUT_MS: '1.5e3' } }).stream.stallTimeoutMs).toBe(1500);
    for (const spelt of ['0x10', '0b1', '0o7', 'Infinity', '1e999', '16ms', '.5']) {
      expect(() => loadConfig({ env: { TIDEGATE_WARMUP_STREAMS: spelt } })).toThrow(`invalid TIDEGATE_WARMUP_STREAMS (warmup.streams): expected a decimal number, got ${JSON.stringify(spelt)}`);
    }
  });

  it('parses a decimal number with an optional sign, fraction and exponent, and nothing else', () => {
    expect(['8080', ' 42\t', '-1', '+2', '0.25', '1e3', '2E-2'].map(parseDecimal)).toEqual([8080, 42, -1, 2, 0.25, 1000, 0.02]);
    expect(['0x10', '0X1F', '0b1', '0o7', 'Infinity', 'NaN', '1e999', '', ' ', '1.', '.5', '1_000', '1,5', '12abc'].map(parseDecimal)).toEqual(Array(14).fill(undefined));
  });

  it.each([
    ['timeouts', 'idleMs'],
    ['stream', 'stallTimeoutMs'],
    ['retry', 'maxDelayMs'],
    ['shutdown', 'graceMs'],
    ['limits', 'requestBodyTimeoutMs'],
  ])('refuses %s.%s past the longest timer Node keeps (a longer one fires at once)', (section, field) => {
    expect(() => parseConfig({ [section]: { [field]: 2 ** 31 - 1 } })).not.toThrow();
    expect(() => parseConfig({ [section]: { [field]: 2 ** 31 } })).toThrow(ConfigError);
    expect(() => parseConfig({ [section]: { [field]: 2 ** 31 } })).toThrow(new RegExp(`${section}\\.${field}: at most 2147483647 ms`));
  });

  it('names the flag a bad override came from', () => {
    expect(() => loadConfig({ overrides: { 'stream.overflow': 'drop' }, overrideOrigins: { 'stream.overflow': '--overflow drop' } })).toThrow(/stream\.overflow: .*\(from --overflow drop\)/);
    expect(() => loadConfig({ env: { TIDEGATE_OVERFLOW: 'terminate' }, overrides: { 'stream.overflow': 'drop' } })).not.toThrow(/TIDEGATE_OVERFLOW/);
  });

  it('refuses the passthrough-only keys resumable and terminator on other providers', () => {
    expect(() => parseConfig({ routes: [{ path: '/v1/chat/completions', provider: 'openai', resumable: true }] })).toThrow(/routes\.0\.resumable: passthrough routes only \(provider openai: use resume for resumable streams\)/);
    expect(() => parseConfig({ routes: [{ path: '/v1/messages', provider: 'anthropic', terminator: { event: 'done' } }] })).toThrow(/routes\.0\.terminator: passthrough routes only/);
    expect(parseConfig({ routes: [{ path: '/e', provider: 'passthrough', url: 'http://feed/sse', resumable: true, terminator: { data: '[DONE]' } }] }).routes?.[0]).toMatchObject({ resumable: true, terminator: { data: '[DONE]' } });
    expect(parseConfig({ routes: [{ path: '/v1/chat/completions', provider: 'openai', resumable: false }] }).routes?.[0]?.resumable).toBe(false);
  });

  it('refuses an upstream URL that is not http or https, naming the field and the value', () => {
    expect(() => parseConfig({ upstream: { url: 'localhost:11434' } })).toThrow(/upstream\.url: expected an http:\/\/ or https:\/\/ URL, got "localhost:11434"/);
    expect(() => parseConfig({ routes: [{ path: '/e', provider: 'passthrough', url: 'ftp://feed/sse' }] })).toThrow(/routes\.0\.url: expected an http/);
    expect(() => loadConfig({ env: { UPSTREAM_URL: 'vllm:8000' } })).toThrow(ConfigError);
    expect(() => parseConfig({ upstream: { url: 'not a url' } })).toThrow(ConfigError);
    expect(() => parseConfig({ upstream: { url: '127.0.0.1:8091' } })).toThrow(/upstream\.url: expected an http:\/\/ or https:\/\/ URL, got "127\.0\.0\.1:8091"/);
    expect(parseConfig({ upstream: { url: 'HTTPS://api.example/v1' } }).upstream.url).toBe('HTTPS://api.example/v1');
  });

  it('refuses an empty UPSTREAM_URL or upstream override instead of running the simulator', () => {
    expect(() => loadConfig({ env: { UPSTREAM_URL: '' } })).toThrow(/^UPSTREAM_URL is set but empty \(upstream\.url\): give the upstream's URL, or leave it unset to run the embedded simulator$/);
    expect(() => loadConfig({ overrides: { 'upstream.url': '' }, overrideOrigins: { 'upstream.url': '--upstream ' } })).toThrow(/^--upstream is empty \(upstream\.url\)/);
    expect(() => loadConfig({ env: { UPSTREAM_URL: '' } })).toThrow(ConfigError);
    // Other empty variables still count as unset.
    expect(loadConfig({ env: { TIDEGATE_OVERFLOW: '', UPSTREAM_API_KEY: '' } }).upstream.url).toBeUndefined();
  });

  it('appends extra passthrough routes to the default ones', () => {
    const config = loadConfig({ extraRoutes: [{ path: '/sse', provider: 'passthrough', url: 'http://u/sse' }] });
    expect(resolveRoutes(config, 'http://up').map((r) => `${r.methods.join('|')} ${r.path}`)).toEqual([
      'POST /v1/chat/completions',
      'POST /v1/responses',
      'POST /v1/completions',
      'GET /v1/models',
      'POST /v1/embeddings',
      'POST /v1/messages',
      'POST /v1/messages/count_tokens',
      'GET|POST /sse',
    ]);
  });

  it('reads CORS origins from TIDEGATE_CORS_ORIGINS as a comma-separated list, normalised to origins', () => {
    const config = loadConfig({ env: { TIDEGATE_CORS_ORIGINS: 'https://a.example/, http://127.0.0.1:3000' } });
    expect(config.cors).toEqual({ origins: ['https://a.example', 'http://127.0.0.1:3000'], credentials: false, maxAgeMs: 600000 });
    expect(parseConfig({}).cors.origins).toEqual([]);
  });

  it('takes a route’s API from the end of its path, and refuses an API of another provider', () => {
    const config = parseConfig({
      routes: [
        { path: '/proxy/v1/embeddings', provider: 'openai', url: 'http://x/e' },
        { path: '/count', provider: 'anthropic', upstreamPath: '/v1/messages/count_tokens' },
        { path: '/m', provider: 'openai', api: 'models' },
      ],
    });
    expect(resolveRoutes(config, 'http://up').map((r) => [r.api, r.methods.join('|')])).toEqual([
      ['embeddings', 'POST'],
      ['count_tokens', 'POST'],
      ['models', 'GET'],
    ]);
    expect(() => parseConfig({ routes: [{ path: '/x', provider: 'anthropic', api: 'embeddings' }] })).toThrow(/routes\.0\.api: api embeddings is served by provider openai/);
  });
});
