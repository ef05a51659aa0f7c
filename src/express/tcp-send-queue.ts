import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6, type Socket } from 'node:net';

/**
 * Bytes a TCP socket holds in the kernel's send queue (sent but not yet acknowledged, or not
 * yet sent), read from Linux `/proc/net/tcp{,6}` (`tx_queue`). `undefined` where that is not
 * available.
 *
 * Why: with multi-MB send buffers, a reader taking 1 KiB/s frees so little kernel space that the
 * socket never becomes writable again for minutes, so neither `'drain'` nor Node's own counters
 * move. The kernel's queue shrinking is the only sign that the reader is alive.
 *
 * One table read is shared by all streams for `maxAgeMs`, so many watched sockets cost one read
 * (it costs about 10 ms of kernel time on a small host, tens of ms with thousands of sockets).
 */
export function kernelSendQueueBytes(socket: Socket, maxAgeMs = 200): number | undefined {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (localAddress === undefined || localPort === undefined || remoteAddress === undefined || remotePort === undefined) return undefined;
  const local = procAddress(localAddress);
  const remote = procAddress(remoteAddress);
  if (local === undefined || remote === undefined) return undefined;
  const now = Date.now();
  if (table === undefined || now - tableReadAt > maxAgeMs) {
    table = readTable();
    tableReadAt = now;
  }
  return table?.get(key(local, localPort, remote, remotePort));
}

let table: Map<string, number> | undefined;
let tableReadAt = 0;
let unavailable = process.platform !== 'linux';

/** Both ends, addresses included: two clients behind different addresses may share a source port. */
function key(localAddress: string, localPort: number, remoteAddress: string, remotePort: number): string {
  return `${localAddress}:${localPort}>${remoteAddress}:${remotePort}`;
}

/**
 * An address as `/proc/net/tcp{,6}` prints it: the bytes of each 32-bit word in host order (so
 * `127.0.0.1` is `0100007F` on little-endian Linux), upper-case hex; 32 digits for IPv6.
 */
export function procAddress(address: string): string | undefined {
  const bytes = ipBytes(address);
  if (bytes === undefined) return undefined;
  let out = '';
  for (let word = 0; word < bytes.length; word += 4) {
    const w = bytes.subarray(word, word + 4);
    const ordered = LITTLE_ENDIAN ? [w[3], w[2], w[1], w[0]] : [w[0], w[1], w[2], w[3]];
    for (const b of ordered) out += (b as number).toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** 4 bytes for IPv4, 16 for IPv6 (`::`, an embedded IPv4 tail and a `%zone` allowed). */
function ipBytes(address: string): Uint8Array | undefined {
  if (isIPv4(address)) return Uint8Array.from(address.split('.').map(Number));
  if (!isIPv6(address)) return undefined;
  let text = address.replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  const tail: number[] = [];
  if (v4 !== null) {
    const [a, b, c, d] = v4[1].split('.').map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, -v4[1].length) + '0:0';
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  if (groups.length !== 8) return undefined;
  const words = groups.map((g) => parseInt(g, 16));
  if (tail.length === 2) words.splice(6, 2, ...tail);
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

function readTable(): Map<string, number> | undefined {
  if (unavailable) return undefined;
  const map = new Map<string, number>();
  let any = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'latin1');
    } catch {
      continue;
    }
    any = true;
    // Fixed layout (net/ipv4/tcp_ipv4.c get_tcp4_sock, tcp6 alike): "sl: LOCAL:PORT REMOTE:PORT ST TX:RX ...",
    // addresses 8 (v4) or 32 (v6) hex digits, ports 4, state 2, queues 8. Parsed at offsets, not
    // split: a busy host lists thousands of sockets, most of them in TIME_WAIT.
    let at = text.indexOf('\n') + 1; // skip the header
    while (at > 0 && at < text.length) {
      const next = text.indexOf('\n', at);
      const sl = text.indexOf(':', at);
      const localPortAt = text.indexOf(':', sl + 1) + 1;
      const remotePortAt = text.indexOf(':', localPortAt + 5) + 1;
      const timeWait = text.charCodeAt(remotePortAt + 5) === 0x30 && text.charCodeAt(remotePortAt + 6) === 0x36; // state 06
      if (sl > 0 && localPortAt > 0 && remotePortAt > 0 && !timeWait) {
        const localAddress = text.slice(sl + 2, localPortAt - 1);
        const remoteAddress = text.slice(localPortAt + 5, remotePortAt - 1);
        const localPort = parseInt(text.slice(localPortAt, localPortAt + 4), 16);
        const remotePort = parseInt(text.slice(remotePortAt, remotePortAt + 4), 16);
        const txQueue = parseInt(text.slice(remotePortAt + 8, remotePortAt + 16), 16);
        if (localPort >= 0 && remotePort >= 0 && txQueue >= 0) map.set(key(localAddress, localPort, remoteAddress, remotePort), txQueue);
      }
      if (next === -1) break;
      at = next + 1;
    }
  }
  if (!any) unavailable = true;
  return any ? map : undefined;
}
