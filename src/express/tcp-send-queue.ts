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
 * One table read is shared by all streams for `maxAgeMs`, so many watched sockets cost one read.
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
    let lineStart = text.indexOf('\n') + 1; // skip the header
    while (lineStart > 0 && lineStart < text.length) {
      const lineEnd = text.indexOf('\n', lineStart);
      const line = text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd);
      lineStart = lineEnd + 1;
      // "  sl  local_address rem_address   st tx_queue:rx_queue ..."
      const fields = line.trim().split(/\s+/);
      if (fields.length < 5) continue;
      const localPort = parseInt(fields[1].slice(fields[1].lastIndexOf(':') + 1), 16);
      const remotePort = parseInt(fields[2].slice(fields[2].lastIndexOf(':') + 1), 16);
      const txQueue = parseInt(fields[4].slice(0, fields[4].indexOf(':')), 16);
      map.set(key(localPort, remotePort), txQueue);
      if (lineEnd === -1) break;
    }
  }
  if (!any) unavailable = true;
  return any ? map : undefined;
}
