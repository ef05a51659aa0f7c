import { SIM_HEADERS, startTestGateway, type TestGateway } from '../helpers';
import { chat, readSse } from './helpers';

// The resume and retrieve endpoints read `after`, `stream` and `starting_after` from the query:
// a parameter repeated or bracketed (an array or an object to Express' parsers) is a 400, never
// read as "absent" (a replay from the start) or as "not streamed".

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;
let streamId = '';
let responseId = '';

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 2000, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: true },
      { path: '/v1/responses', provider: 'openai', forwardHeaders, resume: true },
    ],
  });
  const chatStream = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat() });
  streamId = String(chatStream.headers['x-tidegate-stream-id']);
  await chatStream.ended;
  const responses = await readSse(`${t.gateway.url}/v1/responses`, { body: { model: 'm', input: 'hi', stream: true } });
  await responses.ended;
  responseId = (JSON.parse(responses.events[0]!.data) as { response: { id: string } }).response.id;
});
afterAll(() => t.close());

function expectBadRequest(status: number, body: string, name: string): void {
  expect(status).toBe(400);
  const error = (JSON.parse(body) as { error: { code: string; message: string } }).error;
  expect(error.code).toBe('ERR_TIDEGATE_BAD_REQUEST');
  expect(error.message).toContain(name);
}

describe('GET /v1/streams/{id} query', () => {
  it.each(['after[]=1', 'after[]=1&after[]=2', 'after[x]=1', 'after%5B%5D=1', 'after=1&after=2'])('refuses ?%s with 400 ERR_TIDEGATE_BAD_REQUEST', async (query) => {
    const res = await readSse(`${t.gateway.url}/v1/streams/${streamId}?${query}`);
    await res.ended;
    expect(res.events).toHaveLength(0);
    expectBadRequest(res.status, res.body, 'after');
    expect(t.logs.lines.filter((l) => l.message === 'refused').at(-1)).toMatchObject({ status: 400, errorCode: 'ERR_TIDEGATE_BAD_REQUEST', reason: 'bad_request' });
  });

  it('still resumes from one plain ?after', async () => {
    const res = await readSse(`${t.gateway.url}/v1/streams/${streamId}?after=1`);
    await res.ended;
    expect(res.status).toBe(200);
    expect(res.events[0]!.lastEventId).toBe(`${streamId}:2`);
  });
});

describe('GET /v1/responses/{id} query', () => {
  it.each([
    ['stream=true&starting_after[]=1', 'starting_after'],
    ['stream=true&starting_after[a]=1', 'starting_after'],
    ['stream=true&starting_after=1&starting_after=2', 'starting_after'],
    ['stream=true&stream=true', 'stream'],
    ['stream[]=true&starting_after=1', 'stream'],
    ['starting_after[]=1', 'starting_after'],
  ])('refuses ?%s with 400 ERR_TIDEGATE_BAD_REQUEST', async (query, name) => {
    const res = await readSse(`${t.gateway.url}/v1/responses/${responseId}?${query}`);
    await res.ended;
    expect(res.events).toHaveLength(0);
    expectBadRequest(res.status, res.body, name);
    expect(t.logs.lines.filter((l) => l.message === 'refused').at(-1)).toMatchObject({ status: 400, errorCode: 'ERR_TIDEGATE_BAD_REQUEST', reason: 'bad_request' });
  });

  it('still streams from one plain ?stream=true&starting_after', async () => {
    const res = await readSse(`${t.gateway.url}/v1/responses/${responseId}?stream=true&starting_after=2`);
    await res.ended;
    expect(res.status).toBe(200);
    expect((JSON.parse(res.events[0]!.data) as { sequence_number: number }).sequence_number).toBe(3);
  });
});
