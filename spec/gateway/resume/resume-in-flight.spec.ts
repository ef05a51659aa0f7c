import net from 'node:net';
import { SIM_HEADERS, parsePrometheus, startTestGateway, type TestGateway } from '../helpers';
import { chat, chatText, readSse, seqs } from './helpers';
import { createSseParser, type SseEvent } from '../../../src/sse';

// The events a client had in flight when it dropped (handed to its socket, never read) stay in
// the history while the detached stream reads ahead: a client that comes back with the id of the
// last event it really received gets every later one.

const forwardHeaders = ['content-type', ...SIM_HEADERS];
let t: TestGateway;

beforeAll(async () => {
  t = await startTestGateway({
    sim: { tokensPerSecond: 2000, ttftMs: 1 },
    config: { stream: { heartbeatMs: 0 }, retry: { maxAttempts: 1 } },
    routes: [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders },
      { path: '/resume/v1/chat/completions', upstreamPath: '/v1/chat/completions', provider: 'openai', forwardHeaders, resume: { windowBytes: 16384, lingerMs: 5000 } },
    ],
  });
});
afterAll(() => t.close());

/** POSTs over a raw socket, parses SSE until `n` events arrived, then destroys the socket. */
function readThenClose(port: number, path: string, body: unknown, n: number): Promise<{ streamId: string; events: SseEvent[] }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const payload = JSON.stringify(body);
    const events: SseEvent[] = [];
    let head = '';
    let streamId = '';
    let inBody = false;
    let done = false;
    const parser = createSseParser({
      onEvent: (e) => {
        if (done) return;
        events.push(e);
        if (events.length >= n) {
          done = true;
          socket.destroy();
          resolve({ streamId, events });
        }
      },
    });
    const dechunk = dechunker((b) => parser.feed(b));
    socket.on('error', (err) => (done ? undefined : reject(err)));
    socket.on('data', (chunk: Buffer) => {
      if (inBody) return dechunk(chunk);
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      inBody = true;
      streamId = /x-tidegate-stream-id: *([0-9a-f]+)/i.exec(head.slice(0, end))?.[1] ?? '';
      dechunk(Buffer.from(head.slice(end + 4), 'latin1'));
    });
    socket.write(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n${payload}`);
  });
}

/** Undoes HTTP/1.1 chunked framing (chunk boundaries anywhere), handing the body bytes to `out`. */
function dechunker(out: (b: Buffer) => void): (b: Buffer) => void {
  let buf = Buffer.alloc(0);
  let left = 0;
  return (b) => {
    buf = Buffer.concat([buf, b]);
    for (;;) {
      if (left > 0) {
        const take = Math.min(left, buf.length);
        if (take === 0) return;
        out(buf.subarray(0, take));
        buf = buf.subarray(take);
        left -= take;
        if (left === 0) left = -1; // the CRLF after the chunk
        continue;
      }
      if (left < 0) {
        if (buf.length < 2) return;
        buf = buf.subarray(2);
        left = 0;
        continue;
      }
      const eol = buf.indexOf('\r\n');
      if (eol < 0) return;
      left = parseInt(buf.subarray(0, eol).toString('latin1'), 16);
      buf = buf.subarray(eol + 2);
      if (left === 0) return;
    }
  };
}

describe('resume after a drop with events in flight', () => {
  it('gives a client that resumes from the last event it received every later event, after the detached read-ahead filled', async () => {
    const model = 'sim-synthetic-3000';
    const direct = await readSse(`${t.gateway.url}/v1/chat/completions`, { body: chat(model) });
    await direct.ended;
    const first = await readThenClose(t.gateway.port, '/resume/v1/chat/completions', chat(model), 20);
    expect(first.streamId).toMatch(/^[0-9a-f]{32}$/);
    // Detached, the stream reads ahead into its log (16 KiB at 2000 events/s: well under 100 ms).
    await new Promise((r) => setTimeout(r, 600));
    const metrics = parsePrometheus(await (await fetch(`${t.gateway.url}/metrics`)).text());
    expect(metrics.get('tidegate_resume_detached_streams')).toBe(1);
    expect(metrics.get('tidegate_resume_log_bytes')).toBeGreaterThan(16384);
    const last = first.events[first.events.length - 1]!.lastEventId;
    const rest = await readSse(`${t.gateway.url}/v1/streams/${first.streamId}`, { headers: { 'last-event-id': last } });
    await rest.ended;
    expect(rest.status).toBe(200);
    const all = [...first.events, ...rest.events.filter((e) => e.data !== '[DONE]')];
    const got = seqs(all, first.streamId);
    expect(got).toEqual(got.map((_, i) => i + 1));
    expect(chatText([...first.events, ...rest.events])).toBe(chatText(direct.events));
    expect(rest.events[rest.events.length - 1]!.data).toBe('[DONE]');
  }, 20_000);
});
