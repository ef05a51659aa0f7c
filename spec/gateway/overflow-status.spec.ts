/**
 * BufferOverflowError#status = 503. An overflow before the first byte answers
 * HTTP 503 in each route's error shape; after the headers it is still an in-stream error event.
 */

import { map } from 'rxjs';
import express from 'express';
import { BufferOverflowError } from '../../src/errors';
import { createFlow } from '../../src/flow';
import { sse } from '../../src/express';
import type { SseEventInit } from '../../src/sse';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import type { StreamPolicyFn } from '../../src/gateway/relay/relay';
import type { GatewayEvent } from '../../src/providers/types';
import { CaptureTransport } from './helpers';
import { listen, waitFor } from '../harness/net';
import { oaChunk, post, scriptedUpstream, type ScriptedUpstream } from '../harness/relay-harness';

const anthropicEvents = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":0}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
];

describe('an overflow before the headers is HTTP 503', () => {
  let up: ScriptedUpstream;
  let gw: RunningGateway;
  let logs: CaptureTransport;
  // Fails at the `at`-th event; at 0, synchronously at subscription (the bridge commits the
  // headers right after subscribing: that is the only window before the first byte).
  const failAt = (at: number): StreamPolicyFn => (events) =>
    at === 0 ? createFlow<GatewayEvent>((sink) => sink.error(new BufferOverflowError())) : events.pipe(
      map((e: GatewayEvent, i: number): GatewayEvent => {
        if (i >= at) throw new BufferOverflowError();
        return e;
      }),
    );

  beforeAll(async () => {
    up = await scriptedUpstream();
    up.scripts.set('/oa', () => [oaChunk(null), oaChunk('a'), oaChunk('b'), 'data: [DONE]\n\n']);
    up.scripts.set('/an', () => anthropicEvents);
    up.scripts.set('/pt', () => ['data: one\n\n', 20_000, 'data: two\n\n']);
    const routes = [
      { path: '/oa0', provider: 'openai', url: `${up.url}/oa` },
      { path: '/oa2', provider: 'openai', url: `${up.url}/oa` },
      { path: '/an0', provider: 'anthropic', url: `${up.url}/an` },
      { path: '/an2', provider: 'anthropic', url: `${up.url}/an` },
      { path: '/pt0', provider: 'passthrough', url: `${up.url}/pt` },
    ];
    logs = new CaptureTransport();
    const config = parseConfig({ port: 0, upstream: { url: up.url }, retry: { maxAttempts: 1 }, stream: { heartbeatMs: 0 }, timeouts: { firstByteMs: 2000 }, routes });
    gw = await startGateway(config, {
      logger: createLogger({ transports: [logs] }),
      policies: { '/oa0': failAt(0), '/oa2': failAt(2), '/an0': failAt(0), '/an2': failAt(2), '/pt0': failAt(0) },
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  async function streamLine(route: string, before: number): Promise<Record<string, unknown>> {
    const mine = (): Record<string, unknown> | undefined => (logs.streams().slice(before) as Array<Record<string, unknown>>).find((l) => l.route === route);
    await waitFor(() => mine() !== undefined, 5000);
    return mine() as Record<string, unknown>;
  }

  it('OpenAI route: 503 with the OpenAI error object, logged as an overflow with status 503', async () => {
    const before = logs.streams().length;
    const r = await post(`${gw.url}/oa0`);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body.toString()).error).toMatchObject({ type: 'tidegate_error', code: 'ERR_TIDEGATE_OVERFLOW' });
    const line = await streamLine('/oa0', before);
    expect(line.status).toBe(503);
    expect(line.errorCode).toBe('ERR_TIDEGATE_OVERFLOW');
  });

  it('Anthropic route: 503 with {type:"error", error:{type:"overloaded_error"}}', async () => {
    const r = await post(`${gw.url}/an0`);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body.toString())).toMatchObject({ type: 'error', error: { type: 'overloaded_error', code: 'ERR_TIDEGATE_OVERFLOW' } });
  });

  // A policy that answers without subscribing to `events` (here a flow that errors at
  // subscription) must not leave the upstream call open until the upstream ends it (20 s here):
  // the relay aborts the upstream call when the stream ends, whether or not a body subscriber
  // (BodySubscriber in request.ts) ever released it.
  it('passthrough route: 503 with {error:{code}}, and the upstream call it never read is released', async () => {
    const aborted = up.aborted;
    const r = await post(`${gw.url}/pt0`);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body.toString()).error.code).toBe('ERR_TIDEGATE_OVERFLOW');
    await waitFor(() => up.aborted > aborted, 3000);
    await waitFor(() => gw.app.gateway.activeStreams === 0, 3000);
  });

  it('after the headers, the OpenAI route still answers 200 and ends with an error chunk', async () => {
    const r = await post(`${gw.url}/oa2`);
    expect(r.status).toBe(200);
    const text = r.body.toString();
    expect(text).toContain('"content":"a"');
    expect(text).toMatch(/"code":"ERR_TIDEGATE_OVERFLOW"/);
  });

  it('after the headers, the Anthropic route still answers 200 and ends with event: error overloaded_error', async () => {
    const r = await post(`${gw.url}/an2`);
    expect(r.status).toBe(200);
    const text = r.body.toString();
    expect(text).toContain('event: error');
    expect(text).toContain('overloaded_error');
  });
});

describe('sse() and an overflow', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it('synchronously at subscription: 503; later (headers committed at subscription): 200 and event: error', async () => {
    const app = express();
    app.get('/sync', sse(() => createFlow<SseEventInit>((sink) => sink.error(new BufferOverflowError()))));
    app.get('/late', sse(() => createFlow<SseEventInit>((sink) => {
      const t = setTimeout(() => sink.error(new BufferOverflowError()), 20);
      return () => clearTimeout(t);
    })));
    app.get('/after', sse(() => createFlow<SseEventInit>((sink) => {
      sink.next({ data: 'x' });
      const t = setTimeout(() => sink.error(new BufferOverflowError()), 20);
      return () => clearTimeout(t);
    })));
    const srv = await listen(app);
    close = () => srv.close();
    expect((await fetch(`${srv.url}/sync`)).status).toBe(503);
    const late = await fetch(`${srv.url}/late`);
    expect(late.status).toBe(200);
    expect(await late.text()).toMatch(/event: error[\s\S]*ERR_TIDEGATE_OVERFLOW/);
    const after = await fetch(`${srv.url}/after`);
    expect(after.status).toBe(200);
    expect(await after.text()).toMatch(/event: error[\s\S]*ERR_TIDEGATE_OVERFLOW/);
  });
});


