/**
 * `expressServerOptions(app)` (src/gateway/server.ts) — requests and responses born from
 * subclasses carrying the app's prototypes. Every Express feature must behave as on a plain
 * `http.createServer(app)`, on the gateway's own server and on an app of one's own.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { expressServerOptions, type RunningGateway } from '../../src/gateway/server';
import { testGateway } from '../harness/relay-harness';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  socketId: number;
}

let socketIds = 0;
const ids = new WeakMap<object, number>();
function get(agent: http.Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const sock = res.socket;
      if (!ids.has(sock)) ids.set(sock, ++socketIds);
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8'), socketId: ids.get(sock) ?? 0 }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('expressServerOptions on the gateway server', () => {
  let a: RunningGateway;
  let b: RunningGateway;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  beforeAll(async () => {
    const route = { path: '/v1/chat/completions', provider: 'openai', url: 'http://127.0.0.1:9/v1/chat/completions' };
    ({ gw: a } = await testGateway('http://127.0.0.1:9', [route]));
    ({ gw: b } = await testGateway('http://127.0.0.1:9', [route]));
  });
  afterAll(async () => {
    agent.destroy();
    await a.close();
    await b.close();
  });

  it('serves /healthz, /readyz, HEAD, a JSON 404, /metrics and the playground over one kept-alive socket', async () => {
    const h = await get(agent, `${a.url}/healthz`);
    expect(h.status).toBe(200);
    expect(JSON.parse(h.body)).toEqual({ status: 'ok' });
    expect(h.headers['content-type']).toMatch(/application\/json/);
    const head = await get(agent, `${a.url}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const r = await get(agent, `${a.url}/readyz`);
    expect(JSON.parse(r.body)).toMatchObject({ status: 'ready' });
    const nf = await get(agent, `${a.url}/nope?x=1`);
    expect(nf.status).toBe(404);
    expect(JSON.parse(nf.body).error.code).toBe('ERR_TIDEGATE_NOT_FOUND');
    const m = await get(agent, `${a.url}/metrics`);
    expect(m.status).toBe(200);
    expect(m.body).toMatch(/tidegate_/);
    const p = await get(agent, `${a.url}/playground`);
    expect(p.status).toBe(200);
    expect(p.body).toMatch(/<html|<!doctype/i);
    expect(new Set([h, head, r, nf, m, p].map((x) => x.socketId)).size).toBe(1);
  });

  it('a malformed JSON body gets the provider error shape (Express error middleware) on both gateways of one process', async () => {
    for (const gw of [a, b]) {
      const res = await get(agent, `${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"stream":' });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error).toBeDefined();
    }
  });

  it('Expect: 100-continue (Node builds that response from the subclass too) gets 100 then the JSON error', async () => {
    const got = await new Promise<{ continued: boolean; status: number; body: string }>((resolve, reject) => {
      let continued = false;
      const req = http.request(`${a.url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', expect: '100-continue' } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ continued, status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      });
      req.on('continue', () => {
        continued = true;
        req.end('[1,2]');
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(got.continued).toBe(true);
    expect(got.status).toBe(400);
    expect(JSON.parse(got.body).error).toBeDefined();
  });

  it('each gateway app sees its own req.app and res.app (no prototype leak between apps)', () => {
    expect(a.app.request).not.toBe(b.app.request);
    expect((a.app.request as unknown as { app: unknown }).app).toBe(a.app);
    expect((b.app.request as unknown as { app: unknown }).app).toBe(b.app);
    expect((a.app.response as unknown as { app: unknown }).app).toBe(a.app);
    expect(Object.getPrototypeOf(Object.getPrototypeOf(a.app.request))).toBe(Object.getPrototypeOf(Object.getPrototypeOf(b.app.request)));
  });
});

describe('expressServerOptions on an app of its own', () => {
  let server: http.Server | undefined;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let dir: string;
  afterEach(async () => {
    agent.destroy();
    if (server) await new Promise<void>((r) => server?.close(() => r()));
    server = undefined;
  });
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-r6-'));
    fs.writeFileSync(path.join(dir, 'f.txt'), 'file body');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function serve(app: Express, options = expressServerOptions(app)): Promise<string> {
    server = http.createServer(options, app).listen(0, '127.0.0.1');
    await new Promise<void>((r) => server?.once('listening', () => r()));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  function features(app: Express): void {
    app.use(express.json());
    app.get('/q/:id', (req, res) => {
      res.set('x-id', req.params.id).status(201).json({ q: req.query, id: req.params.id, cookie: req.get('cookie'), ip: req.ip, host: req.hostname, xhr: req.xhr, fresh: req.fresh });
    });
    app.post('/echo', (req, res) => void res.json(req.body));
    app.get('/file', (_req, res) => void res.sendFile(path.join(dir, 'f.txt')));
    app.get('/boom', () => {
      throw new Error('boom');
    });
    app.get('/redir', (_req, res) => res.redirect('/q/1'));
    app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => void res.status(500).json({ caught: err.message }));
  }

  it('query, params, express.json, res.set/status/json, sendFile, redirect, error middleware, HEAD, keep-alive', async () => {
    const app = express();
    features(app);
    const url = await serve(app);
    const q = await get(agent, `${url}/q/7?a=1&b=x`, { headers: { cookie: 'k=v' } });
    expect(q.status).toBe(201);
    expect(q.headers['x-id']).toBe('7');
    expect(JSON.parse(q.body)).toMatchObject({ q: { a: '1', b: 'x' }, id: '7', cookie: 'k=v', host: '127.0.0.1', xhr: false, fresh: false });
    const e = await get(agent, `${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":[1,2]}' });
    expect(JSON.parse(e.body)).toEqual({ x: [1, 2] });
    const f = await get(agent, `${url}/file`);
    expect(f.body).toBe('file body');
    expect(f.headers.etag).toBeDefined();
    const f304 = await get(agent, `${url}/file`, { headers: { 'if-none-match': String(f.headers.etag) } });
    expect(f304.status).toBe(304);
    const boom = await get(agent, `${url}/boom`);
    expect(boom.status).toBe(500);
    expect(JSON.parse(boom.body)).toEqual({ caught: 'boom' });
    const head = await get(agent, `${url}/file`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('9');
    const r = await get(agent, `${url}/redir`);
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe('/q/1');
    expect(new Set([q, e, f, f304, boom, head, r].map((x) => x.socketId)).size).toBe(1);
  });

  it('app.request / app.response extensions made before and after the call are seen', async () => {
    const app = express();
    (app.request as unknown as Record<string, unknown>).before = 'b';
    Object.defineProperty(app.response, 'tagged', { get(this: Response) { return `t:${String(this.statusCode)}`; } });
    const options = expressServerOptions(app);
    (app.request as unknown as Record<string, unknown>).after = 'a';
    (app.response as unknown as Record<string, unknown>).hello = function (this: Response) { this.json({ hi: true }); };
    app.get('/x', (req, res) => void res.json({ before: (req as unknown as Record<string, unknown>).before, after: (req as unknown as Record<string, unknown>).after, tagged: (res as unknown as Record<string, unknown>).tagged }));
    app.get('/h', (_req, res) => (res as unknown as { hello(): void }).hello());
    const url = await serve(app, options);
    expect(JSON.parse((await get(agent, `${url}/x`)).body)).toEqual({ before: 'b', after: 'a', tagged: 't:200' });
    expect(JSON.parse((await get(agent, `${url}/h`)).body)).toEqual({ hi: true });
  });

  // A sub-app mounted before the call keeps the parent's OLD request/response as its prototypes
  // (Express's 'mount' handler does setPrototypeOf(sub.request, parent.request) at mount time).
  // Extensions the parent gets after expressServerOptions() (on the new app.request) must still be
  // seen inside the sub-app, as they are with plain http.createServer(app).
  it('a sub-app mounted before the call sees the parent app.request extensions made after it', async () => {
    const app = express();
    const sub = express();
    sub.get('/x', (req, res) => void res.json({ after: (req as unknown as Record<string, unknown>).after ?? null, viaRes: typeof (res as unknown as Record<string, unknown>).hello }));
    app.use('/sub', sub);
    const options = expressServerOptions(app);
    (app.request as unknown as Record<string, unknown>).after = 'a';
    (app.response as unknown as Record<string, unknown>).hello = () => undefined;
    const url = await serve(app, options);
    expect(JSON.parse((await get(agent, `${url}/sub/x`)).body)).toEqual({ after: 'a', viaRes: 'function' });
  });

  it('two apps in one process keep their own extensions', async () => {
    const one = express();
    const two = express();
    const o1 = expressServerOptions(one);
    const o2 = expressServerOptions(two);
    (one.request as unknown as Record<string, unknown>).who = 'one';
    for (const app of [one, two]) app.get('/who', (req, res) => void res.json({ who: (req as unknown as Record<string, unknown>).who ?? null, same: req.app === app }));
    const url1 = await serve(one, o1);
    const s1 = server;
    server = undefined;
    const url2 = await serve(two, o2);
    try {
      expect(JSON.parse((await get(agent, `${url1}/who`)).body)).toEqual({ who: 'one', same: true });
      expect(JSON.parse((await get(agent, `${url2}/who`)).body)).toEqual({ who: null, same: true });
    } finally {
      await new Promise<void>((r) => s1?.close(() => r()));
    }
  });

  it('called twice on one app, the first server still works', async () => {
    const app = express();
    features(app);
    const first = expressServerOptions(app);
    expressServerOptions(app);
    const url = await serve(app, first);
    const q = await get(agent, `${url}/q/2?z=9`);
    expect(JSON.parse(q.body)).toMatchObject({ id: '2', q: { z: '9' } });
  });
});
