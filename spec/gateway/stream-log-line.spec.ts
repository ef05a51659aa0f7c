import Transport from 'winston-transport';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway } from '../../src/gateway/server';
import { createSimulator } from '../../src/simulator';

const LEVEL = Symbol.for('level');

/** Keeps each entry as its transport gets it, with its keys in their order. */
class Keep extends Transport {
  readonly entries: Record<string | symbol, unknown>[] = [];
  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    this.entries.push(info);
    next();
  }
}

/** The `stream` entry of one streamed request through a gateway logging with `defaultMeta`. */
async function streamEntry(defaultMeta: Record<string, unknown> | undefined): Promise<Record<string | symbol, unknown>> {
  const sim = createSimulator({ tokensPerSecond: 2000, ttftMs: 1 });
  const { url } = await sim.listen(0, '127.0.0.1');
  const keep = new Keep();
  const logger = createLogger({ transports: [keep] });
  if (defaultMeta !== undefined) logger.defaultMeta = defaultMeta;
  const config = parseConfig({ port: 0, upstream: { url }, routes: [{ path: '/v1/chat/completions', provider: 'openai' }] });
  const gateway = await startGateway(config, { logger });
  try {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-en', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.text();
    for (let i = 0; i < 100 && !keep.entries.some((e) => e.message === 'stream'); i++) await new Promise((r) => setTimeout(r, 10));
    const entry = keep.entries.find((e) => e.message === 'stream');
    if (entry === undefined) throw new Error('no stream line');
    return entry;
  } finally {
    await gateway.close();
    await sim.close();
  }
}

describe('the stream log line', () => {
  it("carries its fields, then level and message, with winston's level key (the timestamp added by the format)", async () => {
    const entry = await streamEntry(undefined);
    const keys = Object.keys(entry).filter((k) => k !== 'timestamp');
    expect(keys.slice(0, 7)).toEqual(['streamId', 'route', 'provider', 'method', 'attempts', 'outcome', 'durationMs']);
    expect(keys.slice(-2)).toEqual(['level', 'message']);
    expect(entry).toMatchObject({ level: 'info', message: 'stream', route: '/v1/chat/completions', outcome: 'completed', status: 200 });
    expect(entry[LEVEL]).toBe('info');
  });

  it("takes a logger's defaultMeta, the stream's own fields winning", async () => {
    const entry = await streamEntry({ service: 'gw', route: 'not-the-route' });
    expect(entry).toMatchObject({ level: 'info', message: 'stream', service: 'gw', route: '/v1/chat/completions', outcome: 'completed' });
    expect(Object.keys(entry).filter((k) => k !== 'timestamp').slice(-2)).toEqual(['level', 'message']);
  });
});
