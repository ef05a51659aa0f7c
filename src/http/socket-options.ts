/**
 * Kernel socket options Node does not expose on TCP sockets (`TCP_NOTSENT_LOWAT`, `SO_SNDBUF`,
 * `SO_RCVBUF`) and the kernel's queue sizes of one socket, through the optional addon in
 * `native/socket-options` (Node-API, C; built by `npm ci` where a compiler and Node's headers
 * exist). Without the addon every setter returns `false`, every reader `undefined`, and
 * {@link socketOptionsUnavailable} says why: tidegate runs, with the kernel's own buffer sizes.
 *
 * `TIDEGATE_SOCKET_OPTIONS=off` in the environment turns the addon off (the fallback path);
 * any other value is the path of the addon to load instead of the bundled one.
 */
import path from 'node:path';
import type { Server, Socket } from 'node:net';
import { socketFd } from './node-hooks';

/** An option set in bytes: `notsentLowat` (`TCP_NOTSENT_LOWAT`), `sendBuffer` (`SO_SNDBUF`), `receiveBuffer` (`SO_RCVBUF`). */
export type SocketOption = 'notsentLowat' | 'sendBuffer' | 'receiveBuffer';

/** The kernel's queues of one TCP socket, bytes, as {@link kernelQueueBytes} reads them. */
export interface KernelQueueBytes {
  /** Send queue: sent and not yet acknowledged, plus not yet sent (Linux `SIOCOUTQ`; macOS `SO_NWRITE`). */
  sendQueue: number;
  /** Of the send queue, bytes not yet sent (Linux `SIOCOUTQNSD`; macOS: the whole send queue). */
  unsent: number;
  /** Receive queue: bytes received that the process has not read (`SIOCINQ` / `FIONREAD`). */
  receiveQueue: number;
}

/** What `native/socket-options` exports: errors as negative errno values, never thrown. */
interface SocketOptionsAddon {
  setInt(fd: number, level: number, name: number, value: number): number;
  getInt(fd: number, level: number, name: number): number;
  queue(fd: number, which: 0 | 1 | 2): number;
  constants: Record<string, number | undefined>;
}

let addon: SocketOptionsAddon | undefined;
let unavailable: string | undefined;
let reported = false;

/** Loads the addon once, from `TIDEGATE_SOCKET_OPTIONS` or the bundled build; records why not. */
function load(): void {
  const setting = process.env.TIDEGATE_SOCKET_OPTIONS;
  if (setting === 'off') {
    unavailable = 'turned off by TIDEGATE_SOCKET_OPTIONS=off';
    return;
  }
  // src/http and dist/http both sit two levels under the package root.
  const where = setting !== undefined && setting !== '' ? setting : path.join(__dirname, '..', '..', 'native', 'socket-options');
  try {
    const loaded = require(where) as Partial<SocketOptionsAddon>;
    if (typeof loaded.setInt !== 'function' || typeof loaded.queue !== 'function' || typeof loaded.constants !== 'object') throw new Error('not the socket options addon');
    addon = loaded as SocketOptionsAddon;
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    unavailable = `the socket options addon could not be loaded (${message})`;
  }
}
load();

/**
 * Why socket options cannot be set in this process (a sentence: the addon was not built, failed
 * to load, or `TIDEGATE_SOCKET_OPTIONS=off`), or `undefined` when they can. While it says why,
 * `kernelUnsentBytes` and {@link setUpstreamReceiveBytes} do nothing, {@link kernelQueueBytes}
 * and `handle.state().kernel` are `undefined`, and the kernel's own buffer sizes apply.
 *
 * @example
 * const why = socketOptionsUnavailable();
 * if (why !== undefined) console.warn(`kernel buffers unbounded: ${why}`);
 */
export function socketOptionsUnavailable(): string | undefined {
  return unavailable;
}

function levelAndName(option: SocketOption): [number, number] | undefined {
  const c = (addon as SocketOptionsAddon).constants;
  const [level, name] = option === 'notsentLowat' ? [c.IPPROTO_TCP, c.TCP_NOTSENT_LOWAT] : [c.SOL_SOCKET, option === 'sendBuffer' ? c.SO_SNDBUF : c.SO_RCVBUF];
  return level === undefined || name === undefined ? undefined : [level, name];
}

/**
 * Sets `option` on a connected TCP socket, or a listening TCP server (its accepted sockets
 * inherit it), to `bytes` (a positive integer). Returns `true` when the kernel took it; `false`
 * without the addon, on a platform without the option, on a socket with no descriptor (closed, a
 * pipe, Windows) or when the kernel refused it. Linux doubles `SO_SNDBUF`/`SO_RCVBUF` for its
 * bookkeeping and caps them at `net.core.wmem_max`/`rmem_max`.
 */
export function setSocketOption(socket: Socket | Server, option: SocketOption, bytes: number): boolean {
  if (addon === undefined || !Number.isInteger(bytes) || bytes <= 0) return false;
  const fd = socketFd(socket);
  const at = levelAndName(option);
  if (fd === undefined || at === undefined) return false;
  return addon.setInt(fd, at[0], at[1], Math.min(bytes, 0x7fffffff)) === 0;
}

/** The value of `option` on a socket, bytes (as the kernel reports it), or `undefined` when it cannot be read. */
export function getSocketOption(socket: Socket, option: SocketOption): number | undefined {
  if (addon === undefined) return undefined;
  const fd = socketFd(socket);
  const at = levelAndName(option);
  if (fd === undefined || at === undefined) return undefined;
  const value = addon.getInt(fd, at[0], at[1]);
  return value < 0 ? undefined : value;
}

/**
 * The kernel's send and receive queues of one TCP socket, bytes (Linux `SIOCOUTQ`,
 * `SIOCOUTQNSD`, `SIOCINQ`; macOS `SO_NWRITE`, `FIONREAD`): one `ioctl` each, cheap enough to
 * call per stream on every metrics scrape. Works on any connected TCP socket: a client's
 * `res.socket` (what `handle.state().kernel` reports) or an upstream response's socket.
 * `undefined` without the addon, without a descriptor (closed, a pipe), or when the kernel
 * refuses; never throws.
 *
 * @example
 * const q = kernelQueueBytes(res.socket);
 * if (q !== undefined) gauge.set(q.unsent);
 */
export function kernelQueueBytes(socket: Socket | null | undefined): KernelQueueBytes | undefined {
  if (addon === undefined || socket === null || socket === undefined) return undefined;
  const fd = socketFd(socket);
  if (fd === undefined) return undefined;
  const sendQueue = addon.queue(fd, 0);
  const unsent = addon.queue(fd, 1);
  const receiveQueue = addon.queue(fd, 2);
  if (sendQueue < 0 || unsent < 0 || receiveQueue < 0) return undefined;
  return { sendQueue, unsent, receiveQueue };
}

/**
 * Says once per process what could not be bounded, through `log` (default: a Node process
 * warning, code `TIDEGATE_SOCKET_OPTIONS`), when the addon is unavailable; later calls, and
 * every call while the addon works, do nothing. `what` names the bounds that are missing.
 */
export function reportUnboundedOnce(what: string, log?: (line: string) => void): void {
  if (unavailable === undefined || reported) return;
  reported = true;
  const line = `${what} not bounded: ${unavailable}; the kernel's defaults apply (set net.ipv4.tcp_notsent_lowat system-wide instead, see docs/gateway.md)`;
  if (log !== undefined) log(line);
  else process.emitWarning(line, { code: 'TIDEGATE_SOCKET_OPTIONS' });
}
