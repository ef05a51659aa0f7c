import { createFlow } from '../flow/sources/create';
import type { Flow } from '../flow/flow';
import { encodeSse } from '../sse';

const TEXT =
  'Backpressure is the consumer telling the producer how much it can take. A token stream from a model ' +
  'moves through many buffers before it reaches a screen: the model server, the kernel, the gateway, ' +
  'the proxy, the browser. Each one hides a slow reader until it is full. Demand makes the slowness ' +
  'visible at the source, so the producer pauses instead of piling bytes into memory. When a stage must ' +
  'buffer, it buffers within a byte budget and says what it does when the budget is spent: drop, keep the ' +
  'latest, fail after the backlog, or terminate at once. ';
const WORDS = TEXT.split(/(?<= )/);

/** What the simulated model exposes to telemetry. */
export interface ProducerStats {
  /** Tokens emitted so far. */
  emitted: number;
  /** True while the producer has no demand and waits (the model's socket would back up). */
  paused: boolean;
  /** True once it emitted its last token or was cancelled. */
  stopped: boolean;
}

/**
 * A simulated model: OpenAI-style `chat.completion.chunk` events (about 180 bytes on the wire,
 * like the benchmark's S1 events), already SSE-encoded, at `tokensPerSec` while it has demand,
 * for `durationMs`. With no demand it pauses and accumulates no credit, as a model server
 * behind a full TCP window would.
 */
export function simulatedModel(tokensPerSec: number, durationMs: number, stats: ProducerStats, tickMs = 20): Flow<Buffer> {
  return createFlow<Buffer>((sink) => {
    const total = Math.max(1, Math.round((tokensPerSec * durationMs) / 1000));
    const created = Math.floor(Date.now() / 1000);
    let credit = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      credit = Math.min(credit + ((now - last) * tokensPerSec) / 1000, Math.max(1, tokensPerSec / 5));
      last = now;
      while (credit >= 1 && sink.requested > 0 && stats.emitted < total && !sink.isCancelled) {
        credit--;
        const word = WORDS[stats.emitted % WORDS.length];
        const chunk = {
          id: 'chatcmpl-playground',
          object: 'chat.completion.chunk',
          created,
          model: 'playground-sim',
          choices: [{ index: 0, delta: { content: word }, finish_reason: null }],
        };
        stats.emitted++;
        sink.next(Buffer.from(encodeSse({ id: String(stats.emitted), data: JSON.stringify(chunk) }), 'utf8'));
      }
      stats.paused = sink.requested === 0 && stats.emitted < total;
      if (stats.paused) credit = Math.min(credit, 1);
      if (stats.emitted >= total) {
        stats.stopped = true;
        stats.paused = false;
        clearInterval(timer);
        sink.complete();
      }
    }, tickMs);
    return () => {
      stats.stopped = true;
      stats.paused = false;
      clearInterval(timer);
    };
  });
}
