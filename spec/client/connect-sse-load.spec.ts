import { readFileSync } from 'node:fs';
import { connectSse } from '../../src/client';
import { sleep, waitFor } from '../harness/net';
import { countingUpstream } from '../harness/upstream';
import { collect, scriptedServer, sseHead, within, type ScriptedServer } from './helpers';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const isDone = (e: { data: string }): boolean => e.data === '[DONE]';

/**
 * What one paused TCP connection on loopback can absorb beyond the reader: the sender's maximum
 * send buffer (tcp_wmem max) plus the receiver's initial receive buffer (tcp_rmem default; the
 * kernel only grows it for a reader that keeps reading), plus 1 MiB for the Node stream buffers
 * in between (server `res` highWaterMark, client socket, IncomingMessage and node-fetch
 * PassThrough highWaterMarks).
 */
function kernelBound(): number {
  const wmem = readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/).map(Number);
  const rmem = readFileSync('/proc/sys/net/ipv4/tcp_rmem', 'utf8').trim().split(/\s+/).map(Number);
  return wmem[2] + rmem[1] + 1024 * 1024;
}

describe('connectSse under load', () => {
  it('leaves the socket paused when the subscriber requests 1 event and waits (server offers 32 MiB)', async () => {
    const offered = 32 * 1024 * 1024;
    const upstream = await countingUpstream({ eventBytes: 1000, totalBytes: offered });
    closers.push(upstream.close);
    const c = collect(connectSse(upstream.url), 1);
    await waitFor(() => c.events.length === 1, 3000);
    // Wait for the server's writes to plateau (bounded: at most 50 polls of 100 ms).
    let last = -1;
    for (let i = 0; i < 50; i++) {
      await sleep(100);
      const now = upstream.sent[0];
      if (now === last) break;
      last = now;
    }
    const sent = upstream.sent[0];
    if (process.env.TIDEGATE_REPORT) console.log(`demand bound: server wrote ${sent} B, bound ${kernelBound()} B`);
    expect(c.events).toHaveLength(1);
    expect(sent).toBeLessThan(kernelBound());
    expect(sent).toBeLessThan(offered / 2);
    // More demand resumes reading from where it paused.
    c.sub.request(2000);
    await waitFor(() => c.events.length === 2001, 5000);
    c.sub.cancel();
    await waitFor(() => upstream.aborted === 1, 2000);
  });

  it('spreads the reconnects of 100 clients after a server restart (full jitter)', async () => {
    const clients = 100;
    let first: ScriptedServer | undefined = await scriptedServer((_req, res) => {
      sseHead(res);
      res.write('id: 1\ndata: hello\n\n');
    });
    const port = first.port;
    closers.push(async () => first?.close());
    const subs = Array.from({ length: clients }, () => collect(connectSse(first!.url, { initialDelayMs: 1000, isTerminal: isDone })));
    await waitFor(() => subs.every((s) => s.events.length === 1), 5000);

    const old = first;
    first = undefined;
    await old.close(); // drops every connection at once, as a deploy does
    const second = await scriptedServer((_req, res) => {
      sseHead(res);
      res.end('data: [DONE]\n\n');
    }, port);
    closers.push(second.close);
    await within(Promise.all(subs.map((s) => s.done)), 10_000, 'reconnects');

    expect(second.requests).toHaveLength(clients);
    expect(second.requests.every((r) => r.headers['last-event-id'] === '1')).toBe(true);
    const times = second.requests.map((r) => r.at).sort((a, b) => a - b);
    let busiest = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i] - times[j] > 50) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    // Uniform over ~1 s would put ~5 in a 50 ms window; lockstep would put all 100.
    expect(busiest).toBeLessThan(30);
  });
});
