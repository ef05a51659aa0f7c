import type { Server } from 'node:net';
import { boundListenerUnsent, kernelUnsentBytesFor } from '../express/bridge/kernel-unsent';
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

/**
 * Bounds the unsent bytes of every client socket `server` accepts at the listening socket, when
 * every route gives its streams the same positive `kernelUnsentBytes` (see
 * `boundListenerUnsent`): the bridge then sets nothing per stream. Routes that differ keep
 * setting their own per stream. Call it once the server listens.
 */
export function applyListenerBounds(server: Server, routes: readonly ResolvedRoute[]): void {
  const values = new Set(routes.map((r) => kernelUnsentBytesFor(r.policy.kernelUnsentBytes, r.policy.maxBufferedBytes)));
  if (values.size === 1) boundListenerUnsent(server, [...values][0] as number);
}
