/**
 * The bridge's heartbeat: one per interval of silence, and none into a full socket, whose
 * timer then waits a whole interval instead of firing again at once.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Heartbeat, type HeartbeatStream } from '../../../src/express/bridge/heartbeat';
import { sendFlow, type StreamResult } from '../../../src/express/send-flow';
import { fromIterable } from '../../../src/flow/sources/iterable';
import { sleep } from '../../harness/net';

/** A stream whose socket is full (`beat` writes nothing) or not (`beat` writes and counts). */
function fakeStream(full: boolean): HeartbeatStream & { lastWriteAt: number; beats: number; written: number } {
  const s = {
    lastWriteAt: Date.now(),
    beats: 0,
    written: 0,
    beat(): boolean {
      s.beats++;
      if (full) return false;
      s.written++;
      s.lastWriteAt = Date.now();
      return true;
    },
  };
  return s;
}

describe('Heartbeat', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('writes one heartbeat per interval of silence', () => {
    const stream = fakeStream(false);
    const hb = new Heartbeat(1000, stream);
    hb.start();
    jest.advanceTimersByTime(10_000);
    hb.stop();
    expect(stream.written).toBe(10);
  });

  it('tries a full socket once per interval, not at every tick', () => {
    const stream = fakeStream(true);
    const hb = new Heartbeat(1000, stream);
    hb.start();
    jest.advanceTimersByTime(10_000);
    hb.stop();
    expect(stream.beats).toBe(10);
    expect(stream.written).toBe(0);
  });

  it('re-arms for what remains of the interval after a write', () => {
    const stream = fakeStream(false);
    const hb = new Heartbeat(1000, stream);
    hb.start();
    jest.advanceTimersByTime(600);
    stream.lastWriteAt = Date.now(); // an element was written
    jest.advanceTimersByTime(999);
    expect(stream.written).toBe(0);
    jest.advanceTimersByTime(1);
    expect(stream.written).toBe(1);
    hb.stop();
  });

  it('fires no more once stopped', () => {
    const stream = fakeStream(true);
    const hb = new Heartbeat(1000, stream);
    hb.start();
    hb.stop();
    jest.advanceTimersByTime(10_000);
    expect(stream.beats).toBe(0);
  });
});

describe('heartbeat of a stream whose reader stalled (real socket)', () => {
  it('arms a handful of timers while the socket stays full', async () => {
    const results: StreamResult[] = [];
    const server = http.createServer((_req, res) => {
      const events = (function* () {
        for (let i = 0; i < 10_000; i++) yield { data: 'x'.repeat(8 * 1024) };
      })();
      sendFlow(res, fromIterable(events), { prefetch: 4, heartbeatMs: 50, stallTimeoutMs: 0, onFinish: (r) => results.push(r) });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const client = net.connect(port, '127.0.0.1');
    client.pause(); // never reads: the server's socket fills and stays full
    client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    try {
      await sleep(500); // the kernel's queues and Node's buffer fill in a few ms
      const spy = jest.spyOn(global, 'setTimeout');
      await sleep(1000); // 20 heartbeat intervals with the socket full
      const armed = spy.mock.calls.length;
      spy.mockRestore();
      // One try per 50 ms interval (about 20) and the test's own sleep; a timer re-armed at every
      // millisecond would be about 1,000.
      expect(armed).toBeLessThan(60);
      expect(results).toHaveLength(0); // still open: a full socket is not a finished stream
    } finally {
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
