'use strict';
// Flow micro-benchmark: elements/s through
//   fromIterable → limitRate(256) → onBackpressureBuffer({maxBytes}) → subscriber requesting 64 at a time
// against plain RxJS `from(array).pipe(map(x => x))`, same array, same process, interleaved runs.
// Operators come from the built package (dist/index.js); prints one JSON line, or a skip reason.
//
// Usage: node bench/micro.js --elements N --runs R
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const argv = process.argv.slice(2);
const opt = (k, d) => (argv.includes(k) ? Number(argv[argv.indexOf(k) + 1]) : d);
const N = opt('--elements', 1000000);
const RUNS = opt('--runs', 5);

let lib;
try {
  lib = require(path.resolve(__dirname, '../dist/index.js'));
} catch (e) {
  console.log(JSON.stringify({ skipped: `dist/index.js not loadable: ${String(e.message).split('\n')[0]}` }));
  process.exit(0);
}
const missing = ['fromIterable', 'limitRate', 'onBackpressureBuffer'].filter((k) => typeof lib[k] !== 'function');
if (missing.length) {
  console.log(JSON.stringify({ skipped: `missing exports: ${missing.join(', ')}` }));
  process.exit(0);
}
const rx = require('rxjs');

const data = Array.from({ length: N }, (_, i) => (i % 2 ? 'tok' : 'en'));

function runFlow() {
  return new Promise((resolve, reject) => {
    let count = 0;
    let inBatch = 0;
    let sub;
    const t0 = performance.now();
    const flow = lib.fromIterable(data).pipe(lib.limitRate(256), lib.onBackpressureBuffer({ maxBytes: 1 << 20, overflow: 'error' }));
    sub = flow.subscribeWithDemand({
      onSubscribe(s) {
        sub = s;
        s.request(64);
      },
      next() {
        count++;
        if (++inBatch === 64) {
          inBatch = 0;
          sub.request(64);
        }
      },
      error: reject,
      complete() {
        const ms = performance.now() - t0;
        if (count !== N) reject(new Error(`flow delivered ${count} of ${N}`));
        else resolve(ms);
      },
    });
    setTimeout(() => reject(new Error('flow did not complete within 30 s')), 30000).unref();
  });
}

function runRx() {
  return new Promise((resolve, reject) => {
    let count = 0;
    const t0 = performance.now();
    rx.from(data)
      .pipe(rx.map((x) => x))
      .subscribe({
        next() {
          count++;
        },
        error: reject,
        complete() {
          if (count !== N) reject(new Error(`rx delivered ${count}`));
          else resolve(performance.now() - t0);
        },
      });
  });
}

(async () => {
  try {
    await runFlow(); // warm-up
    await runRx();
    const f = [];
    const r = [];
    for (let i = 0; i < RUNS; i++) {
      f.push(await runFlow());
      r.push(await runRx());
    }
    const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
    const flowMs = med(f);
    const rxMs = med(r);
    console.log(JSON.stringify({ elements: N, runs: RUNS, flowMs, rxMs, flowOpsPerS: (N / flowMs) * 1000, rxOpsPerS: (N / rxMs) * 1000, ratio: flowMs / rxMs }));
  } catch (e) {
    console.log(JSON.stringify({ skipped: `flow micro-benchmark failed: ${e.message}` }));
  }
  process.exit(0);
})();
