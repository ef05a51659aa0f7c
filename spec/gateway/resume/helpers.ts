import http from 'node:http';
import { createSseParser, type SseEvent } from '../../../src/sse';

/** One SSE response read event by event over a real socket. */
export interface SseRead {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  /** Raw body text (non-SSE answers: the error JSON). */
  body: string;
  /** Resolves when the response ended (or the socket was dropped by {@link drop}). */
  ended: Promise<void>;
  /** Resolves once `n` events arrived (rejects after `timeoutMs`). */
  atLeast(n: number, timeoutMs?: number): Promise<void>;
  /** Destroys the client socket (a client that drops). */
  drop(): void;
}

/** Sends a request and reads its answer as SSE, event by event. */
export function readSse(url: string, options: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<SseRead> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = http.request(url, { method: options.method ?? (body ? 'POST' : 'GET'), agent: false, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers } }, (res) => {
      const events: SseEvent[] = [];
      const waiters: { n: number; resolve: () => void }[] = [];
      const parser = createSseParser({
        onEvent: (e) => {
          events.push(e);
          for (const w of waiters.splice(0)) (events.length >= w.n ? w.resolve : () => waiters.push(w))();
        },
      });
      let text = '';
      const ended = new Promise<void>((done) => {
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
          read.body = text;
          parser.feed(chunk);
        });
        res.on('end', () => done());
        res.on('close', () => done());
        res.on('error', () => done());
      });
      const read: SseRead = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        body: '',
        ended,
        atLeast(n, timeoutMs = 5000) {
          if (events.length >= n) return Promise.resolve();
          return new Promise((ok, fail) => {
            const t = setTimeout(() => fail(new Error(`only ${events.length} of ${n} events after ${timeoutMs} ms`)), timeoutMs);
            waiters.push({ n, resolve: () => (clearTimeout(t), ok()) });
          });
        },
        drop() {
          req.destroy();
        },
      };
      resolve(read);
    });
    req.on('error', (err) => reject(err));
    req.end(body);
  });
}

/** The text of OpenAI chat chunks (`choices[0].delta.content`), `[DONE]` and error events skipped. */
export function chatText(events: readonly SseEvent[]): string {
  let out = '';
  for (const e of events) {
    if (e.data === '[DONE]' || e.type !== 'message') continue;
    const chunk = JSON.parse(e.data) as { choices?: { delta?: { content?: string } }[] };
    out += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return out;
}

/** The seq of each event's `<streamId>:<seq>` id. */
export function seqs(events: readonly SseEvent[], streamId: string): number[] {
  return events.map((e) => {
    const [id, seq] = [e.lastEventId.slice(0, e.lastEventId.lastIndexOf(':')), e.lastEventId.slice(e.lastEventId.lastIndexOf(':') + 1)];
    if (id !== streamId) throw new Error(`event id ${e.lastEventId} is not of stream ${streamId}`);
    return Number(seq);
  });
}

/** Waits until `check()` holds, polling every 10 ms (rejects after `timeoutMs`). */
export async function until(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A chat completion request body. */
export function chat(model = 'sim'): Record<string, unknown> {
  return { model, stream: true, messages: [{ role: 'user', content: 'hi' }] };
}
