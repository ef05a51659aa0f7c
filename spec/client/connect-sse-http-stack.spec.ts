import http from 'node:http';
import { connectSse, defaultSseAgent } from '../../src/client';
import { TimeoutError } from '../../src/errors';
import { upstreamAgent } from '../../src/http/node-hooks';
import { waitFor } from '../harness/net';
import { collect, isDone, pooledSockets, scriptedServers, sseHead, within } from './helpers';
import { blackHole } from '../harness/black-hole';

// connectSse sends through tidegate's one upstream HTTP stack (src/http): the connect and
// first-byte deadlines and the upstream agent's sized reads apply to every attempt.

const serve = scriptedServers();

describe('connectSse over the upstream HTTP stack', () => {
  it('fails with TimeoutError kind connect when the connection is not established within connectTimeoutMs', async () => {
    const hole = await blackHole();
    try {
      const started = Date.now();
      const { error } = await within(collect(connectSse(`http://127.0.0.1:${hole.port}/sse`, { connectTimeoutMs: 300, reconnect: false })).done, 5000);
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error).toMatchObject({ kind: 'connect', timeoutMs: 300 });
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      hole.close();
    }
  });

  it("times the connection through a caller's own agent too, without changing that agent", async () => {
    const hole = await blackHole();
    const agent = new http.Agent({ keepAlive: true });
    try {
      const { error } = await within(collect(connectSse(`http://127.0.0.1:${hole.port}/sse`, { agent, connectTimeoutMs: 300, reconnect: false })).done, 5000);
      expect(error).toMatchObject({ kind: 'connect' });
      expect(Object.prototype.hasOwnProperty.call(agent, 'addRequest')).toBe(false);
    } finally {
      agent.destroy();
      hole.close();
    }
  });

  it('reconnects a connection whose first body byte does not come within firstByteTimeoutMs, and fails with it once attempts are spent', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.flushHeaders(); // headers, then nothing
    });
    const reasons: unknown[] = [];
    const c = collect(connectSse(server.url, { firstByteTimeoutMs: 150, maxAttempts: 2, initialDelayMs: 1, onReconnect: (r) => reasons.push(r.error) }));
    const { error } = await within(c.done, 5000);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatchObject({ kind: 'first', timeoutMs: 150 });
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_TIMEOUT', kind: 'first' });
    expect(server.requests).toHaveLength(2);
  });

  it('reads through the upstream keep-alive agent by default, and returns the socket to its pool', async () => {
    const server = await serve((_req, res) => {
      sseHead(res);
      res.end('data: [DONE]\n\n');
    });
    const url = new URL(server.url);
    expect(defaultSseAgent(url)).toBe(upstreamAgent(url));
    const c = collect(connectSse(server.url, { isTerminal: isDone }));
    expect(await within(c.done, 2000)).toEqual({});
    await waitFor(() => pooledSockets(upstreamAgent(url).freeSockets) === 1, 2000);
  });

  it('names no URL in the error of an unreachable server', async () => {
    const server = await serve(() => undefined);
    const port = server.port;
    await server.close();
    const { error } = await within(collect(connectSse(`http://user:secret@127.0.0.1:${port}/sse?key=k`, { reconnect: false })).done, 5000);
    expect(error).toMatchObject({ code: 'ERR_TIDEGATE_SSE_CONNECTION' });
    expect(String((error as Error).message)).not.toMatch(/secret|key=k|127\.0\.0\.1/);
  });
});
