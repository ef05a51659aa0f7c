import express from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expressServerOptions } from '../../src/gateway/server';

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('expressServerOptions', () => {
  it("creates requests and responses with the app's prototypes before Express sees them", async () => {
    const app = express();
    app.get('/q', (req, res) => {
      res.json({ q: req.query.a });
    });
    const seen: boolean[] = [];
    server = http.createServer(expressServerOptions(app), (req, res) => {
      seen.push(Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response);
      app(req, res);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const answer = await get(port, '/q?a=1');
    expect(answer).toEqual({ status: 200, body: '{"q":"1"}' });
    expect(seen).toEqual([true, true]);
  });
});
