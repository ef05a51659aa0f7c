import { setUpstreamReceiveBytes } from '../http/node-hooks';
import { reportUnboundedOnce } from '../http/socket-options';
import type { GatewayConfig, ResolvedRoute } from './config';
import type { Logger } from './logger';

/**
 * Applies the gateway's kernel buffer bounds: `upstream.kernelReceiveBytes` on every upstream
 * socket opened from now on (process-wide), and logs once, at start, the bounds that cannot be
 * set because the socket options addon is unavailable (the routes' `kernelUnsentBytes` is set per
 * stream by the bridge, which then stays silent). A warning line, not an error: the gateway runs
 * with the kernel's own sizes.
 */
export function applyKernelBounds(config: GatewayConfig, routes: readonly ResolvedRoute[], logger: Logger): void {
  setUpstreamReceiveBytes(config.upstream.kernelReceiveBytes);
  const missing: string[] = [];
  if (routes.some((r) => r.policy.kernelUnsentBytes !== 0)) missing.push('unsent bytes per client socket (stream.kernelUnsentBytes)');
  if (config.upstream.kernelReceiveBytes > 0) missing.push('receive queue per upstream socket (upstream.kernelReceiveBytes)');
  if (missing.length > 0) reportUnboundedOnce(`the kernel's ${missing.join(' and ')}`, (line) => logger.warn(line));
}
