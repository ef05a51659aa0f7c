import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * True when `host` (a listening address as configured: an IP literal, optionally in brackets, or
 * a name) is reachable from this machine only: `127.0.0.0/8`, `::1`, `::ffff:127.x.x.x` or
 * `localhost`. Any other name, `0.0.0.0`, `::` and every other address are public.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return isIP(h) === 6 && /^(0{0,4}:){2,7}0{0,3}1$|^::1$/.test(h);
}

/** Who the gateway serves `/playground` to: no one, requests that arrive on loopback ({@link arrivedOnLoopback}), or every request. */
export type PlaygroundAudience = 'none' | 'loopback' | 'everyone';

/**
 * Who the gateway serves its demo surface (`/playground`) to: everyone when `enabled` is `true`,
 * no one when it is `false`; when it is unset, requests that arrive on loopback if the gateway
 * listens on a loopback address ({@link isLoopbackHost}), else no one, so a gateway on `0.0.0.0`
 * does not offer anonymous CPU-costly runs to whoever reaches the port.
 */
export function playgroundAudience(enabled: boolean | undefined, host: string): PlaygroundAudience {
  if (enabled !== undefined) return enabled ? 'everyone' : 'none';
  return isLoopbackHost(host) ? 'loopback' : 'none';
}

/** {@link playgroundAudience} in words, for the gateway's startup log. */
export function playgroundExposure(enabled: boolean | undefined, host: string): string {
  switch (playgroundAudience(enabled, host)) {
    case 'everyone':
      return 'on, every address';
    case 'loopback':
      return 'on, requests that arrive on loopback';
    default:
      return enabled === false ? 'off' : 'off: the host is not loopback (--playground serves it)';
  }
}

/**
 * The same rule per request, for a gateway whose `host` says loopback: the request must also
 * have arrived on a loopback address of this machine (`req.socket.localAddress`). An app that
 * embeds the gateway and calls `app.listen(port)` binds every interface whatever `host` says;
 * a request that came in through another interface is not served the playground.
 */
export function arrivedOnLoopback(req: IncomingMessage): boolean {
  const local = req.socket.localAddress;
  return local !== undefined && isLoopbackHost(local);
}
