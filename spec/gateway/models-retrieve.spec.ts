import http from 'node:http';
import OpenAI from 'openai';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { modelUrl } from '../../src/gateway/upstream-url';
import { listen } from '../harness/net';
import { CaptureTransport } from './helpers';

// `GET /v1/models/{model}` (OpenAI's models.retrieve) is relayed to the models route's upstream URL
// with the id as one more path segment; an id that would name another path never leaves.

describe('models.retrieve through a models route', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gw: RunningGateway;
  const seen: { url: string; auth: string | undefined }[] = [];

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization });
      const id = decodeURIComponent((req.url ?? '').split('?')[0].split('/').pop() ?? '');
      const known = id === 'gpt-sim' || id === 'org/model';
      res.writeHead(known ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(known ? { id, object: 'model', created: 1, owned_by: 'up' } : { error: { message: `The model '${id}' does not exist`, type: 'invalid_request_error', code: 'model_not_found' } }));
    });
    const config = parseConfig({
      port: 0,
      upstream: { url: `${upstream.url}/v1`, apiKey: 'sk-upstream-secret' },
      routes: [{ path: '/v1/models', provider: 'openai', url: `${upstream.url}/base/v1/models?api-version=2` }],
    });
    gw = await startGateway(config, { logger: createLogger({ transports: [new CaptureTransport()] }) });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const client = (): OpenAI => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });

  function rawGet(path: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const req = http.get({ host: u.hostname, port: u.port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
    });
  }

  it('returns the upstream model, asked below the configured URL with its query and key', async () => {
    const model = await client().models.retrieve('gpt-sim');
    expect(model).toMatchObject({ id: 'gpt-sim', object: 'model' });
    expect(seen).toEqual([{ url: '/base/v1/models/gpt-sim?api-version=2', auth: 'Bearer sk-upstream-secret' }]);
  });

  it('keeps a slash inside a model id encoded: one path segment upstream', async () => {
    const got = await rawGet('/v1/models/org%2Fmodel');
    expect(got.status).toBe(200);
    expect(JSON.parse(got.body)).toMatchObject({ id: 'org/model' });
    expect(seen.map((s) => s.url)).toEqual(['/base/v1/models/org%2Fmodel?api-version=2']);
  });

  it("passes the upstream's 404 on as the SDK's NotFoundError", async () => {
    const err = await client()
      .models.retrieve('nope')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toContain("The model 'nope' does not exist");
  });

  it.each(['%2e', '%2E%2e', '.%2e'])('refuses the id %s with a 400 and asks the upstream nothing', async (segment) => {
    const got = await rawGet(`/v1/models/${segment}`);
    expect(got.status).toBe(400);
    expect(JSON.parse(got.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_BAD_REQUEST' } });
    expect(got.body).not.toContain('127.0.0.1');
    expect(seen).toEqual([]);
  });

  it.each(['%2F..%2F..%2Fadmin%2Fkeys', '..%2F..%2Fadmin', 'org%2F.%2Fmodel', 'org%2F%2e%2e', 'a%5C..%5Cadmin', 'gpt%00sim', 'gpt%0d%0aX-Injected:%201', 'gpt%7F'])(
    'refuses the id %s with a 400 and asks the upstream nothing',
    async (id) => {
      const got = await rawGet(`/v1/models/${id}`);
      expect(got.status).toBe(400);
      expect(JSON.parse(got.body)).toMatchObject({ error: { code: 'ERR_TIDEGATE_BAD_REQUEST' } });
      expect(seen).toEqual([]);
    },
  );

  it('answers a path two segments below the route with a 404, not the upstream', async () => {
    const got = await rawGet('/v1/models/org/model');
    expect(got.status).toBe(404);
    expect(seen).toEqual([]);
  });
});

describe('modelUrl', () => {
  it('adds the id as one encoded segment and keeps the query', () => {
    expect(modelUrl('http://h:1/v1/models/?a=1', 'x y/z')).toBe('http://h:1/v1/models/x%20y%2Fz?a=1');
  });

  it.each(['gpt-4o', 'meta-llama/Llama-3.1-8B-Instruct', 'ft:gpt-4o:org:custom:id', 'models/gemini-1.5', 'org/..model', 'v1.5/...'])('passes the id %j as one encoded segment', (id) => {
    expect(modelUrl('http://h:1/v1/models', id)).toBe(`http://h:1/v1/models/${encodeURIComponent(id)}`);
  });

  it.each(['', '.', '..', '/../../admin/keys', '../admin', 'org/./model', 'org/..', 'a\\..\\admin', 'a\\b', 'gpt\u0000', 'gpt\r\nx', 'gpt\u007f', 'gpt\u0085'])('throws BadRequestError for %j', (id) => {
    expect(() => modelUrl('http://h:1/v1/models', id)).toThrow(expect.objectContaining({ code: 'ERR_TIDEGATE_BAD_REQUEST', status: 400 }));
  });
});
