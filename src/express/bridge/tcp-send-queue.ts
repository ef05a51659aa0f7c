import { closeSync, openSync, readSync } from 'node:fs';
import { isIPv4, isIPv6, type Socket } from 'node:net';
import { kernelQueueBytes } from '../../http/socket-options';

/**
 * Bytes in a TCP socket's kernel send queue: one `ioctl` on this socket where the socket options
 * addon is loaded, else {@link kernelSendQueueBytes} (`/proc/net/tcp`, a table shared by all
 * streams for `maxAgeMs`). `undefined` where neither can be read.
 */
export function sendQueueBytes(socket: Socket, maxAgeMs = 200): number | undefined {
  return kernelQueueBytes(socket)?.sendQueue ?? kernelSendQueueBytes(socket, maxAgeMs);
}

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
  return table === undefined ? undefined : txQueue(table, `: ${local}:${hex4(localPort)} ${remote}:${hex4(remotePort)} `);
}

/**
 * The last table read: both files' text in one reused buffer, searched per socket. No per-row
 * objects: the table is kept for `maxAgeMs`, long enough for the young-generation GC to promote
 * whatever a read allocates, and a stall check runs every second for every full socket.
 */
let table: Buffer | undefined;
let tableReadAt = 0;
let tableBuffer = Buffer.allocUnsafeSlow(64 * 1024);
let unavailable = process.platform !== 'linux';

function hex4(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * `tx_queue` of the row whose local and remote ends are `needle` (`": LOCAL:PORT REMOTE:PORT "`,
 * both ends: two clients behind different addresses may share a source port). Fixed layout
 * (net/ipv4/tcp_ipv4.c get_tcp4_sock, tcp6 alike): `sl: LOCAL:PORT REMOTE:PORT ST TX:RX ...`, the
 * state 2 hex digits and the queues 8. A socket in TIME_WAIT (state 06) is not a live one.
 */
function txQueue(text: Buffer, needle: string): number | undefined {
  let at = text.indexOf(needle, 0, 'latin1');
  // A TIME_WAIT row may still carry the ends a new connection reuses: look on past it.
  while (at !== -1 && text[at + needle.length] === 0x30 && text[at + needle.length + 1] === 0x36) at = text.indexOf(needle, at + needle.length, 'latin1');
  if (at === -1) return undefined;
  const state = at + needle.length;
  let tx = 0;
  for (let i = state + 3; i < state + 11; i++) {
    const digit = hexDigit(text[i]);
    if (digit === -1) return undefined;
    tx = tx * 16 + digit;
  }
  return tx;
}

function hexDigit(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
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

function readTable(): Buffer | undefined {
  if (unavailable) return undefined;
  let length = 0;
  let any = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      continue;
    }
    any = true;
    try {
      // procfs files have no size: read until end of file, growing the buffer as needed.
      for (;;) {
        if (length === tableBuffer.length) grow(length);
        const n = readSync(fd, tableBuffer, length, tableBuffer.length - length, null);
        if (n === 0) break;
        length += n;
      }
    } catch {
      // a file that breaks mid-read: what was read is still searched
    } finally {
      closeSync(fd);
    }
    // tcp6 rows after tcp's: a newline between them keeps rows apart.
    if (length === tableBuffer.length) grow(length);
    tableBuffer[length++] = 0x0a;
  }
  if (!any) unavailable = true;
  return any ? tableBuffer.subarray(0, length) : undefined;
}

/** Doubles the table buffer, keeping its first `length` bytes. */
function grow(length: number): void {
  const grown = Buffer.allocUnsafeSlow(tableBuffer.length * 2);
  tableBuffer.copy(grown, 0, 0, length);
  tableBuffer = grown;
}
