'use strict';
// Where a set-up's time to first byte goes, for a Node proxy. Preloaded into every process of a
// bench run with NODE_OPTIONS, it timestamps each connection at both ends on the machine's shared
// clock (performance.timeOrigin + performance.now()):
//
//   load generator (bench/load.js)   connect   (the kernel completed the handshake)
//   proxy (any other Node server)    accept    ('connection': the proxy took it from the kernel's accept queue)
//                                    request   ('request': its head and body parsed)
//                                    write     (the response's first bytes handed to the socket)
//   load generator                   byte      (its first read of the response)
//
// and writes them to $BENCH_TRACE_DIR/<role>.<pid>.json; bench/accept-trace.js joins the two ends
// by the client's port. Without BENCH_TRACE_DIR it does nothing. The fake upstream and the bench
// runner are left alone. Usage (docs/internals.md, "Where the set-up tail comes from"):
//
//   BENCH_TRACE_DIR=/tmp/trace NODE_OPTIONS="--require $PWD/bench/lib/accept-trace.js" \
//     node bench/run.js --only SETUP --targets naive,tidegate-pass --no-auto-variants --no-docs
//   node bench/accept-trace.js /tmp/trace
const dir = process.env.BENCH_TRACE_DIR;
const script = (process.argv[1] || '').replace(/\\/g, '/');
const skip = !dir || global.__tidegateAcceptTrace || /bench\/(run|upstream)\.js$/.test(script);

if (!skip) {
  global.__tidegateAcceptTrace = true;
  const fs = require('node:fs');
  const path = require('node:path');
  const { performance } = require('node:perf_hooks');
  const now = () => performance.timeOrigin + performance.now();
  const records = [];
  const isLoad = /bench\/load\.js$/.test(script);
  const file = path.join(dir, `${isLoad ? 'load' : 'proxy'}.${process.pid}.json`);
  let hooked = false;

  if (isLoad) {
    hooked = true;
    const net = require('node:net');
    const connect = net.connect;
    net.connect = function tracedConnect(options) {
      const rec = { port: 0, connect: 0, byte: 0 };
      const read = options && options.onread;
      if (read && typeof read.callback === 'function') {
        const callback = read.callback;
        read.callback = (n, buf) => {
          if (rec.byte === 0) rec.byte = now();
          return callback(n, buf);
        };
      }
      const socket = connect.apply(this, arguments);
      socket.once('connect', () => {
        rec.port = socket.localPort;
        rec.connect = now();
        records.push(rec);
      });
      return socket;
    };
  } else {
    hooked = true;
    const http = require('node:http');
    const { OutgoingMessage } = require('node:_http_outgoing');
    const ACCEPT = Symbol('acceptedAt');
    const TRACE = Symbol('trace');
    const emit = http.Server.prototype.emit;
    http.Server.prototype.emit = function tracedEmit(event, a, b) {
      if (event === 'connection') a[ACCEPT] = now();
      else if (event === 'request' && a.socket && a.socket[ACCEPT] !== undefined) {
        const rec = { port: a.socket.remotePort, path: a.url, accept: a.socket[ACCEPT], request: now(), write: 0 };
        a.socket[ACCEPT] = undefined; // a keep-alive connection's later requests have no accept
        b[TRACE] = rec;
        records.push(rec);
      }
      return emit.apply(this, arguments);
    };
    const writeRaw = OutgoingMessage.prototype._writeRaw;
    OutgoingMessage.prototype._writeRaw = function tracedWriteRaw() {
      const rec = this[TRACE];
      if (rec !== undefined && rec.write === 0) rec.write = now();
      return writeRaw.apply(this, arguments);
    };
  }

  // bench/baselines.js is told which proxy to be with `--mode <name>`.
  const modeOf = (argv) => {
    const i = argv.indexOf('--mode');
    return i > 0 ? argv[i + 1] : undefined;
  };

  if (hooked) {
    fs.mkdirSync(dir, { recursive: true });
    const save = () => {
      if (records.length === 0) return;
      try {
        fs.writeFileSync(file, JSON.stringify({ script: path.basename(script), name: modeOf(process.argv), records }));
      } catch {
        /* a trace is best effort */
      }
    };
    setInterval(save, 1000).unref();
    process.on('exit', save);
  }
}
