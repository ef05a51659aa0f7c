import express from 'express';
import { listen } from '../harness/net';
import { playgroundRouter, type PlaygroundOptions, type PlaygroundRouter, type RunSample, type ScenarioInput } from '../../src/playground';

export interface Playground {
  url: string;
  router: PlaygroundRouter;
  close(): Promise<void>;
}

/** The router mounted at /playground on a bare express app, on 127.0.0.1:0. */
export async function startPlayground(options: PlaygroundOptions = {}): Promise<Playground> {
  const app = express();
  const router = playgroundRouter({ retainMs: 5_000, ...options });
  app.use('/playground', router);
  const server = await listen(app);
  return {
    url: `${server.url}/playground`,
    router,
    close: async () => {
      router.close();
      await server.close();
    },
  };
}

export interface CreatedRun {
  id: string;
  streamUrl: string;
  telemetryUrl: string;
}

export async function createRun(pg: Playground, scenario: ScenarioInput): Promise<CreatedRun> {
  const res = await fetch(`${pg.url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  if (res.status !== 201) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as CreatedRun;
}

export interface SseMessage {
  event: string;
  data: string;
}

/**
 * Reads an SSE response until `untilEvent` (inclusive), the end of the body, or `timeoutMs`;
 * returns the events and the raw text. Bounded in time and in bytes (8 MiB).
 */
export async function readSse(url: string, options: { untilEvent?: string; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<{ events: SseMessage[]; text: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 20_000);
  options.signal?.addEventListener('abort', () => controller.abort());
  const events: SseMessage[] = [];
  let text = '';
  let pending = '';
  try {
    const origin = new URL(url);
    const res = await fetch(origin, { signal: controller.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const chunk = decoder.decode(value, { stream: true });
      text += chunk;
      pending += chunk;
      if (text.length > 8 * 1024 * 1024) throw new Error('readSse: more than 8 MiB');
      let i: number;
      let stop = false;
      while ((i = pending.indexOf('\n\n')) >= 0) {
        const block = pending.slice(0, i);
        pending = pending.slice(i + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
        }
        if (data.length === 0) continue;
        events.push({ event, data: data.join('\n') });
        if (event === options.untilEvent) stop = true;
      }
      if (stop) {
        await reader.cancel();
        break;
      }
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
  }
  return { events, text };
}

/** The telemetry samples of a run, read until `event: end`. */
export async function telemetry(run: CreatedRun, origin: string, timeoutMs = 20_000): Promise<RunSample[]> {
  const { events } = await readSse(new URL(run.telemetryUrl, origin).href, { untilEvent: 'end', timeoutMs });
  return events.filter((e) => e.event === 'sample' || e.event === 'end').map((e) => JSON.parse(e.data) as RunSample);
}
