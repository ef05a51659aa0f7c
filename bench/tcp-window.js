'use strict';
// How often does a slow reader's TCP window reopen, as the sender sees it?
//
//   node bench/tcp-window.js [readBytesPerSecond=2048] [maxMs=90000]
//
// A sender on 127.0.0.1 keeps its socket full; a reader takes `readBytesPerSecond` (512 B reads
// into a fixed buffer, paused/resumed on a timer, like bench/load.js's `slow` clients). Every
// 200 ms the sender's send queue is read from /proc/net/tcp; each time it moves, the gap since the
// last move is printed. A stall detector on the sender (tidegate's `stallTimeoutMs`) can see a
// reader's progress no more often than this, so the stall timeout must exceed the longest gap for
// the slowest reader it should keep. Bounded: exits after maxMs.
const net = require('node:net');
const fs = require('node:fs');

const rate = Number(process.argv[2] || 2048);
const maxMs = Number(process.argv[3] || 90000);
const hex = (s) => parseInt(s, 16);

function sendQueue(localPort, remotePort) {
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || !f[1].includes(':')) continue;
    if (hex(f[1].split(':')[1]) === localPort && hex(f[2].split(':')[1]) === remotePort) return hex(f[4].split(':')[0]);
  }
  return null;
}

const gaps = [];
const server = net.createServer((s) => {
  const chunk = Buffer.alloc(16384, 97);
  const fill = () => {
    while (s.write(chunk));
  };
  s.on('drain', fill);
  s.on('error', () => {});
  fill();
  const t0 = Date.now();
  let last = null;
  let movedAt = t0;
  const probe = setInterval(() => {
    const q = sendQueue(server.address().port, s.remotePort);
    if (q === null || q === last) return;
    const now = Date.now();
    if (last !== null) {
      gaps.push(now - movedAt);
      console.log(`${((now - t0) / 1000).toFixed(1)} s: send queue ${last} -> ${q} B after ${((now - movedAt) / 1000).toFixed(1)} s`);
    }
    last = q;
    movedAt = now;
  }, 200);
  setTimeout(() => {
    clearInterval(probe);
    console.log(`reader ${rate} B/s: longest gap between window moves ${gaps.length ? (Math.max(...gaps) / 1000).toFixed(1) : `> ${(maxMs / 1000).toFixed(0)}`} s over ${(maxMs / 1000).toFixed(0)} s`);
    process.exit(0);
  }, maxMs);
});

server.listen(0, '127.0.0.1', () => {
  let got = 0;
  const t0 = Date.now();
  const allowed = () => ((Date.now() - t0) * rate) / 1000;
  const c = net.connect({
    port: server.address().port,
    host: '127.0.0.1',
    onread: {
      buffer: Buffer.alloc(512),
      callback: (n) => {
        got += n;
        if (got >= allowed()) c.pause();
      },
    },
  });
  c.on('error', () => {});
  setInterval(() => {
    if (got < allowed()) c.resume();
  }, 50).unref();
});
