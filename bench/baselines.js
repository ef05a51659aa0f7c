'use strict';
// Baseline proxies the bench compares tidegate against, written the way people write them.
//   naive:    Express + node-fetch, `for await (const chunk of upstream.body) res.write(chunk)`,
//             the write() result ignored (so nothing ever slows the upstream).
//   pipeline: Express + http.request, `stream.pipeline(upstreamRes, res)` (Node's own backpressure).
//   fetch:    Express + Node's built-in fetch (undici), `pipeline(Readable.fromWeb(up.body), res)`.
//   hpm:      Express + http-proxy-middleware (`createProxyMiddleware`), its defaults.
// Both forward any path and the request body to UPSTREAM + same path, and abort the upstream
// request when the client leaves.
//
// Usage: node bench/baselines.js --mode naive|pipeline|fetch|hpm --port N --upstream http://127.0.0.1:U
const http = require('node:http');
const { pipeline, Readable } = require('node:stream');
const express = require('express');
const fetch = require('node-fetch');

const argv = process.argv.slice(2);
const opt = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const mode = opt('--mode', 'naive');
const port = Number(opt('--port', '0'));
const upstream = new URL(opt('--upstream', 'http://127.0.0.1:9090'));
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

const app = express();
// http-proxy-middleware streams the request body itself; the others read it first.
if (mode !== 'hpm') app.use(express.raw({ type: () => true, limit: '1mb' }));

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

if (mode === 'naive') {
  app.use(async (req, res) => {
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    try {
      const up = await fetch(new URL(req.originalUrl, upstream).href, {
        method: req.method,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: req.method === 'GET' ? undefined : req.body,
        agent,
        signal: ac.signal,
      });
      res.writeHead(up.status, SSE_HEADERS);
      for await (const chunk of up.body) res.write(chunk); // result ignored, as commonly written
      res.end();
    } catch {
      if (!res.headersSent) res.status(502).end();
      else res.destroy();
    }
  });
} else if (mode === 'fetch') {
  app.use(async (req, res) => {
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    try {
      const up = await globalThis.fetch(new URL(req.originalUrl, upstream).href, {
        method: req.method,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: req.method === 'GET' ? undefined : req.body,
        signal: ac.signal,
      });
      res.writeHead(up.status, SSE_HEADERS);
      pipeline(Readable.fromWeb(up.body), res, () => ac.abort());
    } catch {
      if (!res.headersSent) res.status(502).end();
      else res.destroy();
    }
  });
} else if (mode === 'hpm') {
  const { createProxyMiddleware } = require('http-proxy-middleware');
  app.use(createProxyMiddleware({ target: upstream.origin, agent }));
} else {
  app.use((req, res) => {
    const upReq = http.request(
      new URL(req.originalUrl, upstream),
      { method: req.method, agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } },
      (upRes) => {
        res.writeHead(upRes.statusCode || 502, SSE_HEADERS);
        pipeline(upRes, res, () => upReq.destroy());
      },
    );
    upReq.on('error', () => {
      if (!res.headersSent) res.status(502).end();
      else res.destroy();
    });
    res.on('close', () => upReq.destroy());
    upReq.end(req.method === 'GET' ? undefined : req.body);
  });
}

const server = app.listen(port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ ready: true, mode, port: server.address().port }) + '\n');
});
server.maxConnections = 60000;
process.on('SIGTERM', () => process.exit(0));
