import http from 'node:http';
import { parsePrometheus, startTestGateway, type TestGateway } from './helpers';

// A request the gateway refuses for what it asks (a body that is no JSON object, a media type
// other than JSON, a path that names no model) is refused before the upstream is asked: one
// `refused` line and one count of tidegate_admission_refusals_total by reason, never a `stream`
// line or an upstream_error.

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

function request(port: number, method: string, path: string, headers: Record<string, string>, body?: string, agent: http.Agent | false = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, reusedSocket: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('requests the gateway refuses for what they ask', () => {
  let tg: TestGateway;
  let upstreamAsked: string[];

  beforeEach(async () => {
    tg = await startTestGateway({
      routes: [
        { path: '/v1/chat/completions', provider: 'openai' },
        { path: '/v1/models', provider: 'openai' },
      ],
    });
    upstreamAsked = [];
    tg.sim.server.on('request', (req: http.IncomingMessage) => upstreamAsked.push(`${req.method} ${req.url}`));
  });
  afterEach(() => tg.close());

  const metrics = async (): Promise<Map<string, number>> => parsePrometheus((await request(tg.gateway.port, 'GET', '/metrics', {})).body);

  it.each([
    ['a body that is no JSON', 'POST', '/v1/chat/completions', { 'content-type': 'application/json' }, '{bad', 400, 'ERR_TIDEGATE_BAD_REQUEST', 'bad_request'],
    ['a body of another media type', 'POST', '/v1/chat/completions', { 'content-type': 'text/plain' }, '{"model":"m"}', 415, 'ERR_TIDEGATE_UNSUPPORTED_MEDIA_TYPE', 'media_type'],
    ['a JSON array body', 'POST', '/v1/chat/completions', { 'content-type': 'application/json' }, '[1,2]', 400, 'ERR_TIDEGATE_BAD_REQUEST', 'bad_request'],
    ['an empty body', 'POST', '/v1/chat/completions', { 'content-type': 'application/json' }, '', 400, 'ERR_TIDEGATE_BAD_REQUEST', 'bad_request'],
    ['a model path that names another path', 'GET', '/v1/models/..', {}, undefined, 400, 'ERR_TIDEGATE_BAD_REQUEST', 'bad_request'],
    ['a model path that is no percent-encoding', 'GET', '/v1/models/%zz', {}, undefined, 400, 'ERR_TIDEGATE_BAD_REQUEST', 'bad_request'],
  ] as const)('logs and counts %s as one refusal, asking the upstream nothing', async (_what, method, path, headers, body, status, errorCode, reason) => {
    const answer = await request(tg.gateway.port, method, path, headers, body);
    expect(answer.status).toBe(status);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: errorCode } });
    const route = path.startsWith('/v1/models') ? '/v1/models' : path;
    expect(tg.logs.lines.filter((l) => l.message === 'refused')).toEqual([expect.objectContaining({ level: 'info', route: path, method, status, errorCode, reason })]);
    expect(tg.logs.streams()).toEqual([]);
    const counted = await metrics();
    expect(counted.get(`tidegate_admission_refusals_total{reason="${reason}"}`)).toBe(1);
    expect([...counted.keys()].filter((k) => k.startsWith('tidegate_streams_total') && k.includes(`route="${route}"`))).toEqual([]);
    expect(upstreamAsked).toEqual([]);
  });

  it('keeps the connection of a refused request whose body it read', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await request(tg.gateway.port, 'POST', '/v1/chat/completions', { 'content-type': 'application/json' }, '{bad', agent);
      expect(refused.status).toBe(400);
      expect(refused.headers.connection).toBe('keep-alive');
      const next = await request(tg.gateway.port, 'POST', '/v1/chat/completions', { 'content-type': 'application/json' }, JSON.stringify({ model: 'sim-basic', messages: [] }), agent);
      expect(next.status).toBe(200);
      expect(next.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});
