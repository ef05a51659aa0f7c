import { parseConfig, resolveRoutes } from '../../src/gateway/config';
import { warnDoubledVersionPath } from '../../src/gateway/upstream-path-check';

function warnings(upstreamUrl: string, routes?: unknown[]): { message: string; meta: unknown }[] {
  const lines: { message: string; meta: unknown }[] = [];
  const config = parseConfig({ upstream: { url: upstreamUrl }, ...(routes === undefined ? {} : { routes }) });
  warnDoubledVersionPath(resolveRoutes(config, config.upstream.url), { warn: ((message: string, meta: unknown) => lines.push({ message, meta })) as never });
  return lines;
}

describe('warnDoubledVersionPath', () => {
  it('warns once, naming every route sent to /v1/v1 when upstream.url ends in /v1', () => {
    const lines = warnings('http://127.0.0.1:11434/v1');
    expect(lines).toHaveLength(1);
    expect(lines[0]?.message).toBe(
      'routes /v1/chat/completions, /v1/responses, /v1/completions, /v1/models, /v1/embeddings, /v1/messages, /v1/messages/count_tokens are sent upstream ' +
        "with /v1 twice (/v1/chat/completions to /v1/v1/chat/completions): drop /v1 from upstream.url (the routes add it), or set their upstreamPath",
    );
    expect((lines[0]?.meta as { routes: unknown[] }).routes).toContainEqual({ route: '/v1/messages', upstreamPath: '/v1/v1/messages' });
  });

  it('stays silent for a base URL without /v1, a path prefix, or a route whose upstreamPath drops it', () => {
    expect(warnings('http://127.0.0.1:11434')).toEqual([]);
    expect(warnings('https://r.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21')).toEqual([]);
    expect(warnings('http://127.0.0.1:11434/v1', [{ path: '/v1/chat/completions', provider: 'openai', upstreamPath: '/chat/completions' }])).toEqual([]);
  });

  it('does not name the upstream host or its credentials', () => {
    const [line] = warnings('http://user:secret@upstream.example:8000/v1', [{ path: '/v1/chat/completions', provider: 'openai' }]);
    expect(JSON.stringify(line)).not.toMatch(/secret|upstream\.example|8000/);
  });
});
