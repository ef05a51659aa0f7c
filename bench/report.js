'use strict';
// Writes a run's results: docs/img/bench-*.svg (bench/report/charts.js) and docs/benchmarks.md
// (bench/report/markdown.js).
const fs = require('node:fs');
const path = require('node:path');
const { lineChartLog, barChart, latencyChart, heatmaps, label, color, f, ok } = require('./report/charts');
const { markdown } = require('./report/markdown');

function write(results, root) {
  const imgDir = path.join(root, 'docs/img');
  fs.mkdirSync(imgDir, { recursive: true });
  const written = [];
  const charts = {};
  const S = results.scenarios;
  const put = (name, svg) => {
    if (!svg) return;
    fs.writeFileSync(path.join(imgDir, name), svg);
    written.push(`docs/img/${name}`);
    charts[name] = true;
  };
  if (S.S1 && !S.S1.error) {
    put(
      'bench-s1-rss.svg',
      lineChartLog(
        'S1: gateway RSS during slow and stalled clients',
        'RSS (MB, log scale)',
        Object.entries(S.S1)
          .filter(([, r]) => ok(r) && r.rssSeries)
          .map(([n, r]) => ({ label: label(n), color: color(n), points: r.rssSeries })),
      ),
    );
  }
  const s2Bars = (key, how) =>
    Object.entries(S[key] && !S[key].error ? S[key] : {})
      .filter(([, r]) => ok(r))
      .map(([n, r]) => ({ label: `${label(n)}${how}`, value: r.cpuSPerGb, color: color(n), text: `${f(r.cpuSPerGb, 2)} s/GB · ${f(r.mbPerS, 0)} MB/s` }));
  put('bench-s2-cpu.svg', barChart('S2: proxy CPU seconds per GB relayed (lower is better)', 's/GB', [...s2Bars('S2', ''), ...s2Bars('S2chunk', ', chunk/event')]));
  if (S.S3 && !S.S3.error) put('bench-s3-latency.svg', latencyChart(Object.entries(S.S3)));
  if (S.S4 && !S.S4.error) {
    put(
      'bench-s4-rss.svg',
      barChart(
        'S4: RSS per open stream (KB, lower is better)',
        'KB',
        Object.entries(S.S4)
          .filter(([, r]) => ok(r) && r.kbPerStream != null)
          .map(([n, r]) => ({ label: label(n), value: r.kbPerStream, color: color(n), text: `${f(r.kbPerStream)} KB · ${r.flowing}/${r.streams} flowing` })),
      ),
    );
  }
  if (S.MAP && S.MAP.policies) put('bench-stability.svg', heatmaps(S.MAP));

  fs.writeFileSync(path.join(root, 'docs/benchmarks.md'), markdown(results, charts));
  written.push('docs/benchmarks.md');
  return written;
}

module.exports = { write, markdown };
