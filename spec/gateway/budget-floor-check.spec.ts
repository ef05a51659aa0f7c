import { parseConfig, resolveRoutes } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import { startGateway } from '../../src/gateway/server';
import { budgetFloor, warnSmallBudgets } from '../../src/gateway/budget-floor-check';
import { CaptureTransport } from './helpers';

function warnings(config: Record<string, unknown>): { message: string; meta: unknown }[] {
  const lines: { message: string; meta: unknown }[] = [];
  const parsed = parseConfig({ upstream: { url: 'http://127.0.0.1:9' }, ...config });
  warnSmallBudgets(resolveRoutes(parsed, parsed.upstream.url), { warn: ((message: string, meta: unknown) => lines.push({ message, meta })) as never });
  return lines;
}

const route = (path: string, policy: Record<string, unknown> = {}): Record<string, unknown> => ({ path, provider: 'passthrough', url: 'http://127.0.0.1:9/sse', policy });

describe('warnSmallBudgets', () => {
  it("is the socket's 16 KiB plus prefetch events of 1 KiB", () => {
    expect(budgetFloor(16)).toBe(32 * 1024);
    expect(budgetFloor(1)).toBe(17 * 1024);
  });

  it('warns once, naming each pause route whose budget is under its floor', () => {
    const lines = warnings({ routes: [route('/a', { maxBufferedBytes: 8192 }), route('/b', { maxBufferedBytes: 12288, prefetch: 4 }), route('/c')] });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.message).toMatch(/^routes \/a, \/b have a stream budget under the socket's 16 KiB plus prefetch events of 1 KiB \(\/a: 8192 B, floor 32768 B\).*config file.s stream\.maxBufferedBytes and stream\.prefetch, a route.s policy\.\*, or --max-buffered-bytes\)$/);
    expect((lines[0]?.meta as { routes: unknown[] }).routes).toEqual([
      { route: '/a', maxBufferedBytes: 8192, floor: 32768 },
      { route: '/b', maxBufferedBytes: 12288, floor: 20480 },
    ]);
  });

  it('leaves out the routes that never stream (models, embeddings, count_tokens, stream: false)', () => {
    const lines = warnings({ stream: { maxBufferedBytes: 4096 } });
    expect(lines).toHaveLength(1);
    expect((lines[0]?.meta as { routes: { route: string }[] }).routes.map((r) => r.route)).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/completions', '/v1/messages']);
    expect(warnings({ routes: [{ path: '/v1/chat/completions', provider: 'openai', stream: false, policy: { maxBufferedBytes: 4096 } }] })).toEqual([]);
  });

  it('stays silent at the floor, with a lower prefetch, and under terminate', () => {
    expect(warnings({ routes: [route('/a', { maxBufferedBytes: 32768 }), route('/b', { maxBufferedBytes: 20480, prefetch: 4 }), route('/c', { maxBufferedBytes: 8192, overflow: 'terminate' })] })).toEqual([]);
    expect(warnings({})).toEqual([]);
  });

  it('is logged when the gateway starts with such a budget', async () => {
    const logs = new CaptureTransport();
    const gw = await startGateway(parseConfig({ port: 0, stream: { maxBufferedBytes: 8192 }, routes: [route('/sse')] }), { logger: createLogger({ transports: [logs] }) });
    try {
      expect(logs.lines.some((l) => l.level === 'warn' && String(l.message).includes('route /sse has a stream budget under'))).toBe(true);
    } finally {
      await gw.close();
    }
  });
});
