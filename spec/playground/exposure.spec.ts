import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import type { IncomingMessage } from 'node:http';
import { arrivedOnLoopback, isLoopbackHost, playgroundAudience, playgroundExposure } from '../../src/playground/exposure';
import { CaptureTransport } from '../gateway/helpers';

const CLI = path.join(__dirname, '../../dist/gateway/cli.js');

/** Status of GET /playground, POST /playground/runs and GET /debug/streams on a gateway listening on `host`. */
async function surfaces(host: string, extra: Record<string, unknown> = {}): Promise<{ page: number; runs: number; debug: number }> {
  const gw: RunningGateway = await startGateway(parseConfig({ port: 0, host, upstream: { url: 'http://127.0.0.1:1' }, ...extra }), {
    logger: createLogger({ transports: [new CaptureTransport()] }),
  });
  try {
    const base = `http://127.0.0.1:${gw.port}`;
    const page = (await fetch(`${base}/playground`)).status;
    const runs = (await fetch(`${base}/playground/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status;
    const debug = (await fetch(`${base}/debug/streams`)).status;
    return { page, runs, debug };
  } finally {
    await gw.close();
  }
}

describe('playground exposure', () => {
  it('is off on a non-loopback listening address by default (and /debug/streams with it)', async () => {
    expect(await surfaces('0.0.0.0')).toEqual({ page: 404, runs: 404, debug: 404 });
  });

  it('says in the startup log who it is served to', async () => {
    const said = async (host: string, enabled?: boolean): Promise<unknown> => {
      const capture = new CaptureTransport();
      const gw = await startGateway(parseConfig({ port: 0, host, upstream: { url: 'http://127.0.0.1:1' }, ...(enabled === undefined ? {} : { playground: { enabled } }) }), { logger: createLogger({ transports: [capture] }) });
      await gw.close();
      return capture.lines.find((l) => l.message === 'gateway listening')?.playground;
    };
    expect(await said('0.0.0.0')).toBe('off: the host is not loopback (--playground serves it)');
    expect(await said('0.0.0.0', true)).toBe('on, every address');
    expect(await said('127.0.0.1')).toBe('on, requests that arrive on loopback');
    expect(await said('127.0.0.1', false)).toBe('off');
  });

  it('is on with playground.enabled: true on a non-loopback address', async () => {
    expect(await surfaces('0.0.0.0', { playground: { enabled: true } })).toEqual({ page: 200, runs: 201, debug: 404 });
  });

  it('is on by default on 127.0.0.1, and off there with playground.enabled: false', async () => {
    expect(await surfaces('127.0.0.1')).toEqual({ page: 200, runs: 201, debug: 404 });
    expect(await surfaces('127.0.0.1', { playground: { enabled: false } })).toEqual({ page: 404, runs: 404, debug: 404 });
  });

  it('serves everyone when enabled, no one when disabled, and by default loopback requests of a loopback host only', () => {
    const cases: Array<[boolean | undefined, string]> = [[true, '0.0.0.0'], [true, '127.0.0.1'], [false, '127.0.0.1'], [undefined, '127.0.0.1'], [undefined, '::1'], [undefined, '0.0.0.0']];
    expect(cases.map(([enabled, host]) => [playgroundAudience(enabled, host), playgroundExposure(enabled, host)])).toEqual([
      ['everyone', 'on, every address'],
      ['everyone', 'on, every address'],
      ['none', 'off'],
      ['loopback', 'on, requests that arrive on loopback'],
      ['loopback', 'on, requests that arrive on loopback'],
      ['none', 'off: the host is not loopback (--playground serves it)'],
    ]);
  });

  it('tells loopback addresses from public ones', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) expect([h, isLoopbackHost(h)]).toEqual([h, true]);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', '192.168.1.2', '::2', 'example.com', 'localhost.example.com', '::ffff:10.0.0.1']) expect([h, isLoopbackHost(h)]).toEqual([h, false]);
  });

  it('by default, serves a request only when it arrived on a loopback address (an embedding app.listen(port) binds every interface)', async () => {
    const arrived = (localAddress: string | undefined): boolean => arrivedOnLoopback({ socket: { localAddress } } as unknown as IncomingMessage);
    expect([arrived('127.0.0.1'), arrived('::1'), arrived('::ffff:127.0.0.1')]).toEqual([true, true, true]);
    expect([arrived('10.1.2.3'), arrived('192.168.0.7'), arrived('fe80::1'), arrived(undefined)]).toEqual([false, false, false, false]);
    // Through a real socket on loopback, the default gateway still serves it.
    expect((await surfaces('127.0.0.1')).page).toBe(200);
  });

  it('the CLI on --host 0.0.0.0 serves no playground unless --playground is given', async () => {
    const children: ChildProcess[] = [];
    const start = async (args: string[]): Promise<string> => {
      const child = spawn(process.execPath, [CLI, '--host', '0.0.0.0', ...args], { env: { ...process.env, PORT: '0', LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const deadline = Date.now() + 10_000;
      for (;;) {
        const m = /listening on http:\/\/\S+:(\d+)/.exec(out);
        if (m) return `http://127.0.0.1:${m[1]}`;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no listening line: ${out}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      const off = await start([]);
      expect((await fetch(`${off}/playground`)).status).toBe(404);
      expect((await fetch(`${off}/healthz`)).status).toBe(200);
      const on = await start(['--playground']);
      expect((await fetch(`${on}/playground`)).status).toBe(200);
    } finally {
      for (const c of children) c.kill('SIGKILL');
    }
  });
});
