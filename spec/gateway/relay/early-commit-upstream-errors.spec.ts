import Anthropic from '@anthropic-ai/sdk';
import type http from 'node:http';
import OpenAI from 'openai';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { listen } from '../../harness/net';
import { CaptureTransport } from '../helpers';

/**
 * An upstream HTTP error that arrives after an early commit (`policy.earlyCommitMs`) can no
 * longer be an HTTP status: it is the route's error frame, and the official SDK reading it
 * raises the upstream's own message, type and code, as it would from the HTTP answer.
 */

const KEY = 'sk-early-commit-canary-0123456789';
const CONTEXT = "This model's maximum context length is 8192 tokens";
const DELAY_MS = 400;

type Json = Record<string, unknown>;

/** One provider route: its upstream error JSON, and how its SDK streams (and fails) through the gateway. */
interface Protocol {
  path: string;
  route: Record<string, unknown>;
  /** The provider's HTTP error body. */
  errorBody(message: string): Json;
  /** Streams one request with the provider's SDK at `base` (the gateway's URL and a prefix) and returns what it threw. */
  failure(base: string): Promise<unknown>;
}

async function thrown(consume: () => Promise<void>): Promise<unknown> {
  try {
    await consume();
  } catch (err) {
    return err;
  }
  throw new Error('the stream ended without an error');
}

const openai = (base: string): OpenAI => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'client-key', maxRetries: 0 });

const PROTOCOLS: Record<string, Protocol> = {
  chat: {
    path: '/v1/chat/completions',
    route: { provider: 'openai', api: 'chat' },
    errorBody: (message) => ({ error: { message, type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' } }),
    failure: (base) =>
      thrown(async () => {
        for await (const _ of await openai(base).chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
      }),
  },
  responses: {
    path: '/v1/responses',
    route: { provider: 'openai', api: 'responses' },
    errorBody: (message) => ({ error: { message, type: 'invalid_request_error', code: 'context_length_exceeded', param: 'input' } }),
    failure: (base) =>
      thrown(async () => {
        for await (const _ of await openai(base).responses.create({ model: 'm', stream: true, input: 'hi' }));
      }),
  },
  messages: {
    path: '/v1/messages',
    route: { provider: 'anthropic', api: 'messages' },
    errorBody: (message) => ({ type: 'error', error: { type: 'invalid_request_error', message } }),
    failure: (base) =>
      thrown(async () => {
        const client = new Anthropic({ baseURL: base, apiKey: 'client-key', maxRetries: 0 });
        for await (const _ of await client.messages.create({ model: 'm', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] }));
      }),
  },
};

/** How the upstream answers, chosen by the first segment of the request path. */
const ANSWERS: Record<string, (protocol: Protocol, req: http.IncomingMessage) => { status: number; type: string; body: string }> = {
  context: (p) => ({ status: 400, type: 'application/json', body: JSON.stringify(p.errorBody(CONTEXT)) }),
  // Echoes the credential the gateway sent, as some upstreams do in their 401.
  'echo-key': (p, req) => ({ status: 401, type: 'application/json', body: JSON.stringify(p.errorBody(`Incorrect API key provided: ${String(req.headers.authorization ?? req.headers['x-api-key'])}`)) }),
  html: () => ({ status: 502, type: 'text/html', body: '<html><body>502 Bad Gateway</body></html>' }),
  'other-json': () => ({ status: 503, type: 'application/json', body: '{"error":"overloaded"}' }),
  // Within the 64 KiB error-body bound: an error object nested 20,000 deep, its message no string.
  nested: () => ({ status: 500, type: 'application/json', body: `{"error":{"message":1,"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}}` }),
};

describe('early commit: an upstream HTTP error after the commit, read by the official SDKs', () => {
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: RunningGateway;
  const logs = new CaptureTransport();
  const timers = new Set<NodeJS.Timeout>();

  beforeAll(async () => {
    upstream = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      const [, mode = '', ...rest] = (req.url ?? '').split('/');
      const protocol = Object.values(PROTOCOLS).find((p) => p.path === `/${rest.join('/')}`);
      const answer = ANSWERS[mode];
      if (protocol === undefined || answer === undefined) return void res.writeHead(404).end();
      // Answers after the gateway committed its headers.
      const t = setTimeout(() => {
        timers.delete(t);
        const { status, type, body } = answer(protocol, req);
        res.writeHead(status, { 'content-type': type }).end(body);
      }, DELAY_MS);
      timers.add(t);
    });
    const routes = Object.keys(ANSWERS).flatMap((mode) =>
      Object.values(PROTOCOLS).map((p) => ({ ...p.route, path: `/${mode}${p.path}`, url: `${upstream.url}/${mode}${p.path}`, apiKey: KEY, policy: { earlyCommitMs: 100 } })),
    );
    gateway = await startGateway(parseConfig({ port: 0, retry: { maxAttempts: 1 }, routes }), { logger: createLogger({ transports: [logs] }) });
  });

  afterAll(async () => {
    await gateway.close();
    for (const t of timers) clearTimeout(t);
    await upstream.close();
  });

  it.each(['chat', 'responses'])('%s: the openai SDK raises the upstream error message, type, code and param', async (name) => {
    const protocol = PROTOCOLS[name] as Protocol;
    const err = await protocol.failure(`${gateway.url}/context`);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const expected = protocol.errorBody(CONTEXT).error as Json;
    // A stream error has no HTTP status: the 200 went out before the upstream answered.
    expect(err).toMatchObject({ status: undefined, message: CONTEXT, type: expected.type, code: expected.code, param: expected.param });
    expect(logs.streams().find((l) => l.route === `/context${protocol.path}`)).toMatchObject({ status: 200, upstreamStatus: 400, errorCode: 'ERR_TIDEGATE_UPSTREAM_STATUS' });
  });

  it('messages: the anthropic SDK raises the upstream error type and message', async () => {
    const err = await (PROTOCOLS.messages as Protocol).failure(`${gateway.url}/context`);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err).toMatchObject({ status: undefined, type: 'invalid_request_error', apiMessage: CONTEXT });
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: CONTEXT } });
    expect(logs.streams().find((l) => l.route === '/context/v1/messages')).toMatchObject({ status: 200, upstreamStatus: 400 });
  });

  it.each(Object.keys(PROTOCOLS))('%s: the upstream error message is relayed with the key the gateway sent redacted', async (name) => {
    const err = await (PROTOCOLS[name] as Protocol).failure(`${gateway.url}/echo-key`);
    const message = name === 'messages' ? (err as { apiMessage?: unknown }).apiMessage : (err as Error).message;
    expect(message).toBe('Incorrect API key provided: [redacted]');
    expect(JSON.stringify((err as { error?: unknown }).error)).not.toContain(KEY);
  });

  it.each(Object.keys(PROTOCOLS))('%s: an error object nested past the stack is relayed as an error, and the gateway serves on', async (name) => {
    const err = await (PROTOCOLS[name] as Protocol).failure(`${gateway.url}/nested`);
    expect(err).toBeInstanceOf(name === 'messages' ? Anthropic.APIError : OpenAI.APIError);
    expect((err as Error).message).not.toMatch(/call stack/);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });

  it.each(Object.keys(PROTOCOLS).flatMap((name) => [[name, 'html'], [name, 'other-json']]))('%s: a body that is not the provider error JSON (%s) keeps ERR_TIDEGATE_UPSTREAM_STATUS', async (name, mode) => {
    const err = await (PROTOCOLS[name] as Protocol).failure(`${gateway.url}/${mode}`);
    const status = mode === 'html' ? 502 : 503;
    if (name === 'messages') {
      expect(err).toMatchObject({ status: undefined, apiMessage: `upstream answered HTTP ${status}` });
      expect((err as { error?: Json }).error?.error).toMatchObject({ code: 'ERR_TIDEGATE_UPSTREAM_STATUS' });
    } else expect(err).toMatchObject({ status: undefined, code: 'ERR_TIDEGATE_UPSTREAM_STATUS', type: 'tidegate_error', message: `upstream answered HTTP ${status}` });
  });
});
