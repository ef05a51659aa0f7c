import { API_SPECS } from './config/apis';
import type { ResolvedRoute } from './config';
import type { Logger } from './logger';

/** What a client's socket accepts before `res.write()` returns false (Node's `highWaterMark`), bytes. */
const SOCKET_HIGH_WATER_MARK = 16 * 1024;
/** A token event's size the floor assumes (deltas are 100–300 B on the wire; tool calls more), bytes. */
const TYPICAL_EVENT_BYTES = 1024;

/**
 * The smallest `maxBufferedBytes` a route under `overflow: pause` should have: the socket's
 * 16 KiB plus `prefetch` events of 1 KiB. Below it, events requested before a full socket was
 * seen can overrun the budget, and a stream ends with `ERR_TIDEGATE_OVERFLOW` though its client
 * reads (docs/gateway.md, configuration note 1).
 */
export function budgetFloor(prefetch: number): number {
  return SOCKET_HIGH_WATER_MARK + prefetch * TYPICAL_EVENT_BYTES;
}

/**
 * Logs one warning at start naming the streaming `pause` routes whose byte budget is under
 * {@link budgetFloor}. A warning, not an error: a route of small events may run on less, and a
 * test may want the overflow.
 *
 * @param routes the resolved routes
 * @param logger where the warning goes; its fields are each route's budget and floor, bytes
 */
export function warnSmallBudgets(routes: readonly Pick<ResolvedRoute, 'path' | 'policy' | 'api' | 'stream'>[], logger: Pick<Logger, 'warn'>): void {
  const small = routes.flatMap(({ path, policy, api, stream }) => {
    // A route that answers whole JSON bodies only streams nothing to overrun.
    if (!stream || !API_SPECS[api].streams) return [];
    const floor = budgetFloor(policy.prefetch);
    return policy.overflow === 'pause' && policy.maxBufferedBytes < floor ? [{ route: path, maxBufferedBytes: policy.maxBufferedBytes, floor }] : [];
  });
  if (small.length === 0) return;
  const first = small[0] as { route: string; maxBufferedBytes: number; floor: number };
  logger.warn(
    `${small.length === 1 ? 'route' : 'routes'} ${small.map((s) => s.route).join(', ')} ${small.length === 1 ? 'has' : 'have'} a stream budget under the socket's 16 KiB ` +
      `plus prefetch events of 1 KiB (${first.route}: ${first.maxBufferedBytes} B, floor ${first.floor} B): its streams may end with ERR_TIDEGATE_OVERFLOW ` +
      `while their clients read; raise maxBufferedBytes or lower prefetch ` +
      `(the config file's stream.maxBufferedBytes and stream.prefetch, a route's policy.*, or --max-buffered-bytes)`,
    { routes: small },
  );
}
