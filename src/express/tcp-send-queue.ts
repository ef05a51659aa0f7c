import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

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
  if (socket.localPort === undefined || socket.remotePort === undefined) return undefined;
  const now = Date.now();
  if (table === undefined || now - tableReadAt > maxAgeMs) {
    table = readTable();
    tableReadAt = now;
  }
  return table?.get(key(socket.localPort, socket.remotePort));
}

let table: Map<string, number> | undefined;
let tableReadAt = 0;
let unavailable = process.platform !== 'linux';

function key(localPort: number, remotePort: number): string {
  return `${localPort}:${remotePort}`;
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
        const localPort = parseInt(text.slice(localPortAt, localPortAt + 4), 16);
        const remotePort = parseInt(text.slice(remotePortAt, remotePortAt + 4), 16);
        const txQueue = parseInt(text.slice(remotePortAt + 8, remotePortAt + 16), 16);
        if (localPort >= 0 && remotePort >= 0 && txQueue >= 0) map.set(key(localPort, remotePort), txQueue);
      }
      if (next === -1) break;
      at = next + 1;
    }
  }
  if (!any) unavailable = true;
  return any ? map : undefined;
}
