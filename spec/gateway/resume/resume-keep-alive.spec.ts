import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../../src/gateway/config';
import { createLogger } from '../../../src/gateway/logger';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { CaptureTransport } from '../helpers';
import { readSse } from './helpers';

// A resumable Anthropic route whose upstream sends keep-alives (`event: ping`) and nothing else
// after message_start, over real sockets: the pings go through the readers' demand.

const MESSAGE_START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":0}}}\n\n';
const PING = `event: ping\ndata: {"type": "ping", "pad": "${'p'.repeat(2000)}"}\n\n`;

let upstream: http.Server;
let gw: RunningGateway;
/** Bytes the flooding upstream got written into its socket so far. */
let flooded = 0;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(MESSAGE_START);
    if (req.url?.includes('slow') === true) {
      const timer = setInterval(() => res.write(PING), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const pump = (): void => {
      // Honours its own backpressure, bounded at 200 MB.
      while (flooded < 200e6 && !res.destroyed) {
        flooded += PING.length;
        if (!res.write(PING)) return void res.once('drain', pump);
      }
    };
    pump();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startGateway(
    parseConfig({
      port: 0,
      upstream: { url },
      stream: { heartbeatMs: 0, stallTimeoutMs: 0 },
      retry: { maxAttempts: 1 },
      routes: [
        { path: '/v1/messages', upstreamPath: '/flood', provider: 'anthropic', resume: { windowBytes: 65536 } },
        { path: '/slow/v1/messages', upstreamPath: '/slow', provider: 'anthropic', resume: { windowBytes: 65536 } },
      ],
    }),
    { logger: createLogger({ transports: [new CaptureTransport()] }) },
  );
});

afterAll(async () => {
  await gw.close();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

const body = { model: 'm', max_tokens: 10, stream: true, messages: [] };

describe('ReplayStream keep-alives', () => {
  it('hands a reading client each ping as it comes, before any numbered event follows', async () => {
    const read = await readSse(`${gw.url}/slow/v1/messages`, { body, headers: { 'anthropic-version': '2023-06-01' } });
    await read.atLeast(4, 3000);
    read.drop();
    expect(read.events[0]!.type).toBe('message_start');
    expect(read.events.slice(1, 4).map((e) => e.type)).toEqual(['ping', 'ping', 'ping']);
  });

  it('pauses a ping-only upstream once a client stops reading', async () => {
    const json = JSON.stringify(body);
    const socket = net.connect(gw.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    socket.pause(); // a client that never reads
    try {
      // Paused: the upstream's socket stays full for 1.5 s once the kernel buffers on both sides
      // took what they could (a few MB on loopback), well before 6 s.
      let last = -1;
      let still = 0;
      const deadline = Date.now() + 6000;
      while (still < 1500 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        still = flooded === last ? still + 250 : 0;
        last = flooded;
      }
      expect(still).toBeGreaterThanOrEqual(1500);
      expect(flooded).toBeLessThan(50e6);
    } finally {
      socket.destroy();
    }
  });
});
