'use strict';
// Micro-benchmarks: the Flow chain against plain RxJS, and the SSE parser against eventsource-parser.
const fs = require('node:fs');
const path = require('node:path');
const { table, ROOT } = require('../lib/harness');

async function run(hn) {
  const { P, results } = hn;
  const out = {};
  const m = await hn.runScript('micro', path.join(ROOT, 'bench/micro.js'), ['--elements', String(P.micro.elements), '--runs', String(P.micro.runs)], 60000);
  out.flow = m.json || { skipped: m.rec.stderrTail.slice(-300) || 'no output' };
  // The SSE parser benchmark belongs to another owner; call it when present.
  const candidates = ['bench/dist/sse-parser.js', 'bench/sse-parser.js', 'bench/sse-parser.cjs'].map((f) => path.join(ROOT, f));
  const parserFile = candidates.find((f) => fs.existsSync(f));
  if (parserFile) {
    const { rec: pr, json } = await hn.runScript('sse-parser', parserFile, hn.quick ? ['--quick'] : [], 120000);
    out.parser = { file: path.relative(ROOT, parserFile), json, stdout: pr.stdoutLines.slice(-40).join('\n'), exit: pr.exited };
  } else {
    out.parser = { skipped: 'bench/sse-parser.* not present' };
  }
  results.scenarios.MICRO = out;
  const f = out.flow;
  if (f && f.flowOpsPerS) {
    table('Flow micro-benchmark', ['chain', 'elements/s'], [
      ['fromIterable → limitRate(256) → onBackpressureBuffer → request(64)', Math.round(f.flowOpsPerS).toLocaleString('en')],
      ['RxJS from(array).pipe(map)', Math.round(f.rxOpsPerS).toLocaleString('en')],
      ['Flow time / RxJS time', f.ratio.toFixed(2) + '×'],
    ]);
  } else console.log(`\nFlow micro-benchmark skipped: ${JSON.stringify(f).slice(0, 200)}`);
  if (out.parser.stdout) console.log(`\nSSE parser benchmark (${out.parser.file}):\n${out.parser.stdout}`);
  else console.log(`\nSSE parser benchmark skipped: ${out.parser.skipped}`);
}

module.exports = { key: 'MICRO', run };
