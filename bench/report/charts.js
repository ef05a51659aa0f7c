'use strict';
// Hand-written SVG charts of bench results (docs/img/bench-*.svg), and the systems' labels.

const COLORS = { naive: '#d62728', pipeline: '#ff7f0e', 'fetch-pipeline': '#bcbd22', hpm: '#8c564b', nginx: '#2ca02c', 'nginx-sndbuf64k': '#98df8a', 'tidegate-pass': '#1f77b4', 'tidegate-openai': '#9467bd', 'tidegate-responses': '#e377c2', direct: '#7f7f7f' };
const LABELS = {
  naive: 'naive Express proxy',
  pipeline: 'http.request + pipeline()',
  'fetch-pipeline': 'fetch + pipeline()',
  hpm: 'http-proxy-middleware',
  nginx: 'nginx',
  'nginx-sndbuf64k': 'nginx, sndbuf=64k',
  'tidegate-pass': 'tidegate passthrough',
  'tidegate-openai': 'tidegate OpenAI route',
  'tidegate-responses': 'tidegate Responses route',
  direct: 'direct (no proxy)',
};

/** A row's label from its target name: `<base>[~variant][@before][+terminate]`. */
function label(name) {
  const m = /^([^~@+]+)(?:~([^@+]+))?(@before)?(\+terminate)?$/.exec(name);
  if (!m) return name;
  return `${LABELS[m[1]] || m[1]}${m[2] ? ` (${m[2]})` : ''}${m[3] ? ' (before)' : ''}${m[4] ? ', terminate' : ''}`;
}

/** A row's colour: its base target's, lighter for `@before` and `+terminate` rows. */
function color(name) {
  const base = /^[^~@+]+/.exec(name)[0];
  const c = COLORS[base] || '#888';
  return /@before|\+terminate|~/.test(name) ? c + '99' : c;
}

const STATE_COLORS = { completed: '#2ca02c', slowed: '#98df8a', terminated: '#ffbb78', grew: '#d62728' };
const STATE_TEXT = { completed: 'completed', slowed: 'upstream slowed, bounded', terminated: 'cut (error event, reset or close)', grew: 'userland memory grew' };

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const ok = (r) => r && !r.error;

function svgDoc(w, h, body) {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="#fff"/>\n${body}\n</svg>\n`;
}

/** Line chart with a log10 y axis (RSS spans 40 MB to several GB across proxies). */
function lineChartLog(title, yLabel, series) {
  const W = 760;
  const H = 380;
  const L = 70;
  const R = 200;
  const T = 40;
  const B = 50;
  const pts = series.flatMap((s) => s.points);
  if (!pts.length) return null;
  const xMax = Math.max(...pts.map((p) => p[0])) || 1;
  const yMinRaw = Math.max(1, Math.min(...pts.map((p) => p[1])));
  const yMaxRaw = Math.max(...pts.map((p) => p[1]));
  const lo = Math.floor(Math.log10(yMinRaw));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(yMaxRaw)));
  const x = (v) => L + (v / xMax) * (W - L - R);
  const y = (v) => H - B - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (H - T - B);
  let body = `<text x="${W / 2 - R / 2}" y="22" text-anchor="middle" font-size="14" font-weight="600">${esc(title)}</text>\n`;
  for (let e = lo; e <= hi; e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v < 10 ** lo || v > 10 ** hi) continue;
      body += `<line x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`;
      body += `<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${v >= 1000 ? v / 1000 + ' G' : v}</text>\n`;
    }
  }
  const step = xMax > 10000 ? 5000 : xMax > 4000 ? 1000 : 500;
  for (let t = 0; t <= xMax; t += step) body += `<text x="${x(t).toFixed(1)}" y="${H - B + 16}" text-anchor="middle" fill="#555">${t / 1000}</text>`;
  body += `\n<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">seconds</text>`;
  body += `<text x="16" y="${(T + H - B) / 2}" transform="rotate(-90 16 ${(T + H - B) / 2})" text-anchor="middle">${esc(yLabel)}</text>\n`;
  body += `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#333"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#333"/>\n`;
  series.forEach((s, i) => {
    const d = s.points.map((p, k) => `${k ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join('');
    body += `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>\n`;
    body += `<rect x="${W - R + 14}" y="${T + i * 20}" width="12" height="12" fill="${s.color}"/><text x="${W - R + 32}" y="${T + i * 20 + 10}">${esc(s.label)}</text>\n`;
  });
  return svgDoc(W, H, body);
}

/** Horizontal bar chart; items {label, value, color, text}. */
function barChart(title, unit, items) {
  items = items.filter((i) => Number.isFinite(i.value));
  if (!items.length) return null;
  const W = 760;
  const rowH = 28;
  const L = 220;
  const R = 150;
  const T = 40;
  const H = T + items.length * rowH + 30;
  const vMax = Math.max(...items.map((i) => i.value)) || 1;
  let body = `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="600">${esc(title)}</text>\n`;
  items.forEach((it, k) => {
    const yy = T + k * rowH;
    const w = Math.max(1, (it.value / vMax) * (W - L - R));
    body += `<text x="${L - 8}" y="${yy + 17}" text-anchor="end">${esc(it.label)}</text>`;
    body += `<rect x="${L}" y="${yy + 4}" width="${w.toFixed(1)}" height="${rowH - 8}" fill="${it.color}"/>`;
    body += `<text x="${(L + w + 6).toFixed(1)}" y="${yy + 17}" fill="#333">${esc(it.text ?? `${it.value.toFixed(2)} ${unit}`)}</text>\n`;
  });
  return svgDoc(W, H, body);
}

/** Grouped bars for latency (p50 and p99 per target). */
function latencyChart(rows) {
  const items = [];
  for (const [n, r] of rows) {
    if (!ok(r) || r.p50 == null) continue;
    items.push({ label: `${label(n)} p50`, value: r.p50, color: color(n), text: `${r.p50.toFixed(2)} ms` });
    items.push({ label: `${label(n)} p99`, value: r.p99, color: color(n), text: `${r.p99.toFixed(2)} ms` });
  }
  return barChart('S3: emit → receive latency (ms), p50 and p99', 'ms', items);
}

function heatmaps(map) {
  const names = Object.keys(map.policies);
  if (!names.length) return null;
  const cw = 92;
  const ch = 34;
  const L = 90;
  const gap = 40;
  const T = 70;
  const gridW = map.consumers.length * cw;
  const W = Math.max(L + names.length * (gridW + gap) + 20, 620);
  const H = T + map.producers.length * ch + 110;
  let body = `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="600">Stability map: producer rate × consumer read rate (${map.streams} streams per cell, ${map.cellMs / 1000} s)</text>\n`;
  names.forEach((name, pi) => {
    const x0 = L + pi * (gridW + gap);
    body += `<text x="${x0 + gridW / 2}" y="${T - 30}" text-anchor="middle" font-weight="600">${esc(name)}</text>\n`;
    map.consumers.forEach((c, ci) => {
      body += `<text x="${x0 + ci * cw + cw / 2}" y="${T - 8}" text-anchor="middle" font-size="11" fill="#555">${esc(consumerLabel(c))}</text>`;
    });
    map.producers.forEach((rate, ri) => {
      if (pi === 0) body += `<text x="${L - 8}" y="${T + ri * ch + ch / 2 + 4}" text-anchor="end" font-size="11">${rate} ev/s</text>`;
      map.consumers.forEach((c, ci) => {
        const cell = map.policies[name].find((x) => x.rate === rate && x.consumer === c);
        const st = cell ? cell.state : null;
        const fill = st ? STATE_COLORS[st] : '#ddd';
        const label = !cell ? 'n/a' : st === 'terminated' ? `${cutKind(cell)} ${cell.errored}/${cell.n}` : st === 'grew' ? (cell.heldMaxB != null ? fmtShort(cell.heldMaxB) : `RSS +${f(cell.rssGrowthMb, 0)} MB`) : st;
        body += `<rect x="${x0 + ci * cw}" y="${T + ri * ch}" width="${cw - 2}" height="${ch - 2}" fill="${fill}"/>`;
        body += `<text x="${x0 + ci * cw + cw / 2 - 1}" y="${T + ri * ch + ch / 2 + 4}" text-anchor="middle" font-size="11">${esc(label)}</text>\n`;
      });
    });
  });
  const ly = T + map.producers.length * ch + 30;
  body += `<text x="${L}" y="${ly - 8}" font-size="11" fill="#555">columns: client read rate; rows: upstream events/s (≈150 B each); "grew" cells show the largest userland backlog of one stream</text>`;
  Object.entries(STATE_COLORS).forEach(([k, col], i) => {
    const lx = L + (i % 2) * 230;
    const lyy = ly + 10 + Math.floor(i / 2) * 22;
    body += `<rect x="${lx}" y="${lyy}" width="14" height="14" fill="${col}"/><text x="${lx + 20}" y="${lyy + 11}">${esc(STATE_TEXT[k])}</text>`;
  });
  return svgDoc(W, H, body);
}

/** Short name of how a cell's streams were cut: the dominant kind ("reset", "error ev", "closed"). */
function cutKind(cell) {
  const c = cell.cut;
  if (!c) return 'cut';
  const kinds = [['error ev', c.error], ['reset', c.reset], ['closed', c.closed + (c.unread || 0)]].filter(([, v]) => v > 0);
  return kinds.length === 1 ? kinds[0][0] : 'cut';
}

/** "20/20 (reset 20)" for the markdown tables. */
function cutText(cell) {
  const c = cell.cut || {};
  const how = [['error event', c.error], ['reset', c.reset], ['closed', c.closed], ['end not yet read', c.unread]].filter(([, v]) => v).map(([k, v]) => `${k} ${v}`);
  return `${cell.errored}/${cell.n}${how.length ? ` (${how.join(', ')})` : ''}`;
}

/** S1's kernel TCP memory cell: the peak, and whether the kernel was under memory pressure. */
function kernelTcpCell(k) {
  if (!k || k.peakMb === null || k.peakMb === undefined) return 'n/a';
  const ms = k.counters && k.counters.TCPMemoryPressuresChrono;
  return `${f(k.peakMb / 1000, 2)} GB${k.underPressure ? ` (**under pressure**${ms ? ` ${f(ms / 1000, 0)} s` : ''})` : ''}`;
}

function endedHow(r, kind) {
  const parts = [];
  const closed = (r[`${kind}Closed`] || 0) + (r[`${kind}Unread`] || 0);
  if (closed) parts.push(`+${closed} closed without either`);
  return parts.join(' ');
}

function consumerLabel(c) {
  return c === 'stalled' || c === 'fast' ? c : c >= 1 << 20 ? `${c / 2 ** 20} MiB/s` : `${c / 1024} KiB/s`;
}
function fmtShort(b) {
  return b >= 1 << 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : `${(b / 1024).toFixed(0)} KiB`;
}
const fmtB = (b) => (b == null ? 'n/a' : b >= 1 << 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`);
const f = (v, d = 1) => (v == null || !Number.isFinite(v) ? 'n/a' : v.toFixed(d));


/** A markdown table; cells are short strings. */
function mdTable(cols, rows) {
  return [`| ${cols.join(' | ')} |`, `|${cols.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

module.exports = { lineChartLog, barChart, latencyChart, heatmaps, cutText, kernelTcpCell, consumerLabel, label, color, fmtB, f, esc, ok, mdTable };
