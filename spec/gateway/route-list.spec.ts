import { startTestGateway, type TestGateway } from './helpers';

// The startup log and the 404 answer name the endpoints as the app mounted them: one list, so
// a path the gateway serves is never missing from either.

describe('the route list', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startTestGateway({
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/models', provider: 'openai' },
        { path: '/v1/responses', provider: 'openai', resume: true },
        { path: '/events', provider: 'passthrough', url: 'http://127.0.0.1:9/sse' },
      ],
    });
  });
  afterAll(() => t.close());

  function logged(): string[] {
    const line = t.logs.lines.find((l) => l.message === 'gateway listening');
    return line?.routes as string[];
  }

  async function notFoundList(): Promise<string[]> {
    const res = await fetch(`${t.gateway.url}/v1/nowhere`);
    expect(res.status).toBe(404);
    const { error } = (await res.json()) as { error: { message: string } };
    return (/; routes: (.*)$/.exec(error.message)?.[1] ?? '').split(', ');
  }

  it('names every mounted endpoint in the startup log, with its provider', () => {
    expect(logged()).toEqual([
      'GET /v1/streams/{streamId} (resume)',
      'POST /v1/chat/completions (openai)',
      'GET /v1/models (openai)',
      'GET /v1/models/{model} (openai)',
      'POST /v1/responses (openai)',
      'GET /v1/responses/{responseId} (openai)',
      'GET|POST /events (passthrough)',
    ]);
  });

  it('names the same endpoints in a 404 answer', async () => {
    expect(await notFoundList()).toEqual(logged().map((r) => r.replace(/ \(.*\)$/, '')));
  });

  it('lists only endpoints the app serves', async () => {
    for (const entry of await notFoundList()) {
      const [methods, path] = entry.split(' ');
      const get = methods.split('|')[0] === 'GET';
      const res = await fetch(`${t.gateway.url}${path.replace(/\{\w+\}/g, 'x')}`, { method: get ? 'GET' : 'POST', body: get ? undefined : '{}', headers: { 'content-type': 'application/json' } });
      // An unknown stream id may be a 404 too, but not the one for a path no endpoint serves.
      expect([entry, await res.text()]).not.toEqual([entry, expect.stringContaining('no route for')]);
    }
  });
});
