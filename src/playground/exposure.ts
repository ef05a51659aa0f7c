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

/**
 * Whether the gateway serves its demo surface (`/playground`): as configured when
 * `enabled` is set, otherwise only when it listens on a loopback address ({@link isLoopbackHost}),
 * so a gateway on `0.0.0.0` does not offer anonymous CPU-costly runs to whoever reaches the port.
 */
export function playgroundEnabled(enabled: boolean | undefined, host: string): boolean {
  return enabled ?? isLoopbackHost(host);
}

/**
 * Who the gateway serves `/playground` to, in words for its startup log: the rule of
 * {@link playgroundEnabled}, and per request that of {@link arrivedOnLoopback} unless `enabled`.
 */
export function playgroundExposure(enabled: boolean | undefined, host: string): string {
  if (!playgroundEnabled(enabled, host)) return enabled === false ? 'off' : 'off: the host is not loopback (--playground serves it)';
  return enabled === true ? 'on, every address' : 'on, requests that arrive on loopback';
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
