import type { ResolvedRoute } from './config';
import type { Logger } from './logger';

/**
 * Logs one warning at start naming the routes whose upstream path holds `/v1/v1`: an
 * `upstream.url` that ends in `/v1` (as OpenAI SDK base URLs do) with routes that append their
 * own `/v1/…`. Such routes answer every request with the upstream's 404, so the start says why.
 * A warning, not an error: an upstream may serve that path.
 *
 * @param routes the resolved routes; those without an upstream URL are skipped
 * @param logger where the warning goes; its fields are the routes and their upstream paths, never the host
 */
export function warnDoubledVersionPath(routes: readonly Pick<ResolvedRoute, 'path' | 'url'>[], logger: Pick<Logger, 'warn'>): void {
  const doubled = routes.flatMap((route) => {
    if (route.url === undefined || !URL.canParse(route.url)) return [];
    const { pathname } = new URL(route.url);
    return /\/v1\/v1(\/|$)/i.test(pathname) ? [{ route: route.path, upstreamPath: pathname }] : [];
  });
  if (doubled.length === 0) return;
  const first = doubled[0] as { route: string; upstreamPath: string };
  logger.warn(
    `${doubled.length === 1 ? 'route' : 'routes'} ${doubled.map((d) => d.route).join(', ')} ${doubled.length === 1 ? 'is' : 'are'} sent upstream with /v1 twice ` +
      `(${first.route} to ${first.upstreamPath}): drop /v1 from upstream.url (the routes add it), or set their upstreamPath`,
    { routes: doubled },
  );
}
