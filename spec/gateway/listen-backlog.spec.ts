/**
 * `limits.backlog` is the listening socket's accept queue (src/gateway/server.ts): connections
 * the kernel completes while the event loop is busy wait there, instead of having their
 * handshake dropped and retried after TCP's 1 s retransmission timer.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './helpers';

/** Opens `count` connections at once; prints how many connected within `withinMs`. */
const BURST = `
const net = require('node:net');
const [port, count, withinMs] = process.argv.slice(1).map(Number);
const sockets = [];
let connected = 0;
process.stdin.once('data', () => {
  const started = Date.now();
  for (let i = 0; i < count; i++) {
    const s = net.connect(port, '127.0.0.1', () => { if (Date.now() - started <= withinMs) connected++; });
    s.on('error', () => {});
    sockets.push(s);
  }
  setTimeout(() => {
    process.stdout.write(JSON.stringify({ connected }));
    for (const s of sockets) s.destroy();
    process.exit(0);
  }, withinMs + 50);
});
process.stdout.write('ready');
`;

/** Linux's cap on any listen backlog. */
const somaxconn = Number(fs.readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
const COUNT = Math.min(600, somaxconn - 1);
const WITHIN_MS = 600;

/**
 * Opens COUNT connections to `tg` from another process while this one's event loop is blocked
 * for longer than WITHIN_MS (nothing is accepted meanwhile); resolves with how many of them the
 * kernel completed within WITHIN_MS.
 */
async function burstWhileBlocked(tg: TestGateway): Promise<number> {
  const { port } = tg.gateway.server.address() as AddressInfo;
  const child = spawn(process.execPath, ['-e', BURST, String(port), String(COUNT), String(WITHIN_MS)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.stdout.on('data', (c: string) => (out += c));
  child.stdin.write('go');
  const until = Date.now() + WITHIN_MS + 300;
  while (Date.now() < until); // the gateway's event loop accepts nothing meanwhile
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return (JSON.parse(out) as { connected: number }).connected;
}

let tg: TestGateway | undefined;
afterEach(async () => {
  await tg?.close();
  tg = undefined;
});

describe('the listen backlog (limits.backlog)', () => {
  it('holds a burst of connections completed while the event loop is busy (default 4096)', async () => {
    tg = await startTestGateway();
    expect(await burstWhileBlocked(tg)).toBe(COUNT);
  }, 15_000);

  it('is the accept queue the kernel keeps: past a small one, handshakes wait for a retransmission', async () => {
    tg = await startTestGateway({ config: { limits: { backlog: 16 } } });
    const connected = await burstWhileBlocked(tg);
    // Linux completes backlog + 1 connections; the rest wait out the 1 s SYN retransmission.
    expect(connected).toBeLessThanOrEqual(16 + 1);
    expect(connected).toBeGreaterThan(0);
  }, 15_000);
});
