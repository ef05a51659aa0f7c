'use strict';
// The kernel's TCP memory, read from /proc: S1 parks megabytes per stream in socket buffers on
// purpose, and past `tcp_mem`'s pressure threshold Linux prunes receive queues, drops segments
// and shrinks windows; senders then wait out backed-off retransmission and zero-window-probe
// timers (up to 120 s), whichever proxy sits in between. These figures tell such a stall from a
// proxy's own.
const fs = require('node:fs');

const PAGE = 4096;
/** TcpExt counters that move when the kernel is short of TCP memory or a sender backs off. */
const COUNTERS = ['TCPMemoryPressures', 'TCPMemoryPressuresChrono', 'PruneCalled', 'RcvPruned', 'TCPRcvQDrop', 'TCPTimeouts', 'TCPWinProbe', 'TCPToZeroWindowAdv'];

function read(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** `tcp_mem` (pages): [low, pressure, high], or null. */
function tcpMemLimits() {
  const v = read('/proc/sys/net/ipv4/tcp_mem').trim().split(/\s+/).map(Number);
  return v.length === 3 && v.every(Number.isFinite) ? v : null;
}

/** Pages of memory all TCP sockets hold now (`/proc/net/sockstat`), or null. */
function tcpMemPages() {
  const m = /^TCP:.*\bmem (\d+)/m.exec(read('/proc/net/sockstat'));
  return m ? Number(m[1]) : null;
}

/** The TcpExt counters of {@link COUNTERS} now (cumulative since boot), or null. */
function counters() {
  const lines = read('/proc/net/netstat').split('\n');
  for (let i = 0; i + 1 < lines.length; i += 2) {
    if (!lines[i].startsWith('TcpExt:')) continue;
    const names = lines[i].split(/\s+/);
    const values = lines[i + 1].split(/\s+/);
    const out = {};
    for (const c of COUNTERS) {
      const k = names.indexOf(c);
      if (k > 0) out[c] = Number(values[k]);
    }
    return out;
  }
  return null;
}

/**
 * Watches the kernel's TCP memory while a target runs: `sample()` on the bench's sampling
 * tick records the peak, `result()` the peak against `tcp_mem` and the counters' deltas.
 */
class KernelTcpWatch {
  constructor() {
    this.limits = tcpMemLimits();
    this.start = counters();
    this.peakPages = tcpMemPages();
  }

  sample() {
    const p = tcpMemPages();
    if (p !== null && (this.peakPages === null || p > this.peakPages)) this.peakPages = p;
  }

  result() {
    this.sample();
    const end = counters();
    const deltas = {};
    if (this.start && end) for (const c of COUNTERS) if (c in end && c in this.start) deltas[c] = end[c] - this.start[c];
    return {
      peakMb: this.peakPages === null ? null : (this.peakPages * PAGE) / 1e6,
      pressureMb: this.limits ? (this.limits[1] * PAGE) / 1e6 : null,
      highMb: this.limits ? (this.limits[2] * PAGE) / 1e6 : null,
      underPressure: deltas.TCPMemoryPressures > 0 || (this.limits !== null && this.peakPages !== null && this.peakPages >= this.limits[1]),
      counters: deltas,
    };
  }
}

/**
 * Every TCP socket in /proc/net/tcp{,6}, keyed `localPort>remotePort`: send and receive queues
 * (bytes), state (`01` established, `06` TIME_WAIT, ...), the active timer (the `tr` column: 0
 * none, 1 retransmit, 2 keepalive, 3 TIME_WAIT, 4 zero-window probe) and unrecovered
 * retransmission timeouts. A socket the peer reset is gone from the table (its queues were
 * discarded). When one port pair appears twice (a TIME_WAIT leftover and a live socket), the
 * established one wins.
 */
function tcpQueues() {
  const out = {};
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = read(f).split('\n');
    for (let i = 1; i < lines.length; i++) {
      const p = lines[i].trim().split(/\s+/);
      if (p.length < 7) continue;
      const lp = parseInt(p[1].split(':').pop(), 16);
      const rp = parseInt(p[2].split(':').pop(), 16);
      const [tx, rx] = p[4].split(':').map((h) => parseInt(h, 16));
      const key = `${lp}>${rp}`;
      const prev = out[key];
      if (prev && prev.st === '01' && p[3] !== '01') continue;
      out[key] = { lp, rp, tx, rx, st: p[3], timer: p[5].split(':')[0], retransmits: parseInt(p[6], 16) };
    }
  }
  return out;
}

/**
 * The established TCP links of a server port (the fake upstream's), from {@link tcpQueues}: the
 * server's side (sender: unsent bytes, active timers by code, most retransmission timeouts) and
 * the client's side (receiver: unread bytes).
 */
function linksOfPort(port) {
  const sender = { links: 0, txBytes: 0, txMax: 0, timers: {}, retransmitsMax: 0 };
  const receiver = { links: 0, rxBytes: 0, rxMax: 0, withUnread: 0 };
  for (const row of Object.values(tcpQueues())) {
    if (row.st !== '01') continue;
    if (row.lp === port) {
      sender.links++;
      sender.txBytes += row.tx;
      sender.txMax = Math.max(sender.txMax, row.tx);
      sender.timers[row.timer] = (sender.timers[row.timer] || 0) + 1;
      sender.retransmitsMax = Math.max(sender.retransmitsMax, row.retransmits);
    } else if (row.rp === port) {
      receiver.links++;
      receiver.rxBytes += row.rx;
      receiver.rxMax = Math.max(receiver.rxMax, row.rx);
      if (row.rx > 0) receiver.withUnread++;
    }
  }
  return { sender, receiver };
}

/**
 * The kernel queues of one system under test's OWN sockets, apart from the fake upstream's and
 * the load generator's: its client side (sockets whose local port is its listening port: the send
 * queue towards the clients, `tx`, and what the clients sent and it has not read, `rx`) and its
 * upstream side (sockets whose remote port is the fake upstream's: the receive queue of bytes the
 * upstream sent that it has not read, `rx`, and its own unsent request bytes, `tx`). `sample()`
 * reads /proc/net/tcp{,6} once; `result()` gives the peaks over the samples (bytes): the totals,
 * the largest single socket, and the totals divided by the client-side sockets open then.
 */
class OwnSocketWatch {
  constructor({ listenPort, upstreamPort }) {
    this.listenPort = listenPort;
    this.upstreamPort = upstreamPort;
    this.samples = 0;
    this.peak = { clientTx: 0, clientRx: 0, upstreamRx: 0, upstreamTx: 0, total: 0, clientSockets: 0, upstreamSockets: 0, totalPerClientSocket: 0 };
    this.maxSocket = { clientTx: 0, upstreamRx: 0 };
  }

  sample() {
    const now = { clientTx: 0, clientRx: 0, upstreamRx: 0, upstreamTx: 0, clientSockets: 0, upstreamSockets: 0 };
    for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const text = read(f);
      let i = text.indexOf('\n') + 1;
      while (i > 0 && i < text.length) {
        const end = text.indexOf('\n', i);
        const line = text.slice(i, end < 0 ? text.length : end);
        i = end < 0 ? -1 : end + 1;
        const p = line.trim().split(/\s+/);
        if (p.length < 5 || p[3] === '0A') continue; // 0A: listening
        const lp = parseInt(p[1].slice(p[1].lastIndexOf(':') + 1), 16);
        const rp = parseInt(p[2].slice(p[2].lastIndexOf(':') + 1), 16);
        if (lp !== this.listenPort && rp !== this.upstreamPort) continue;
        const c = p[4].indexOf(':');
        const tx = parseInt(p[4].slice(0, c), 16);
        const rx = parseInt(p[4].slice(c + 1), 16);
        if (lp === this.listenPort) {
          now.clientSockets++;
          now.clientTx += tx;
          now.clientRx += rx;
          if (tx > this.maxSocket.clientTx) this.maxSocket.clientTx = tx;
        } else {
          now.upstreamSockets++;
          now.upstreamRx += rx;
          now.upstreamTx += tx;
          if (rx > this.maxSocket.upstreamRx) this.maxSocket.upstreamRx = rx;
        }
      }
    }
    this.samples++;
    const total = now.clientTx + now.clientRx + now.upstreamRx + now.upstreamTx;
    for (const k of Object.keys(now)) this.peak[k] = Math.max(this.peak[k], now[k]);
    this.peak.total = Math.max(this.peak.total, total);
    if (now.clientSockets > 0) this.peak.totalPerClientSocket = Math.max(this.peak.totalPerClientSocket, total / now.clientSockets);
    return { ...now, total };
  }

  result() {
    if (this.samples === 0) this.sample();
    return { samples: this.samples, peak: { ...this.peak }, maxSocket: { ...this.maxSocket } };
  }
}

module.exports = { KernelTcpWatch, OwnSocketWatch, linksOfPort, tcpQueues, tcpMemLimits, tcpMemPages };
