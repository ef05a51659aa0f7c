'use strict';
// Renders bench results: hand-written SVG charts (docs/img/bench-*.svg) and docs/benchmarks.md.
const fs = require('node:fs');
const path = require('node:path');

const COLORS = { naive: '#d62728', pipeline: '#ff7f0e', nginx: '#2ca02c', 'tidegate-pass': '#1f77b4', 'tidegate-pass+terminate': '#17becf', 'tidegate-openai': '#9467bd', 'tidegate-openai+terminate': '#e377c2', direct: '#7f7f7f' };
const LABELS = {
  naive: 'naive Express proxy',
  pipeline: 'stream.pipeline() proxy',
  nginx: 'nginx (proxy_buffering off)',
  'tidegate-pass': 'tidegate passthrough',
  'tidegate-pass+terminate': 'tidegate passthrough, --overflow terminate',
  'tidegate-openai': 'tidegate OpenAI adapter',
  'tidegate-openai+terminate': 'tidegate OpenAI adapter, --overflow terminate',
  direct: 'direct (no proxy)',
};
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
    items.push({ label: `${LABELS[n] || n} p50`, value: r.p50, color: COLORS[n] || '#888', text: `${r.p50.toFixed(2)} ms` });
    items.push({ label: `${LABELS[n] || n} p99`, value: r.p99, color: COLORS[n] || '#888', text: `${r.p99.toFixed(2)} ms` });
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

/** "10 error event + 3 reset + 1 closed" style summary of how S1 streams of one kind ended. */
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

function mdTable(cols, rows) {
  return [`| ${cols.join(' | ')} |`, `|${cols.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

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
          .map(([n, r]) => ({ label: LABELS[n] || n, color: COLORS[n] || '#888', points: r.rssSeries })),
      ),
    );
  }
  if (S.S2 && !S.S2.error) {
    put(
      'bench-s2-cpu.svg',
      barChart(
        'S2: gateway CPU seconds per GB relayed (lower is better)',
        's/GB',
        Object.entries(S.S2)
          .filter(([, r]) => ok(r))
          .map(([n, r]) => ({ label: LABELS[n] || n, value: r.cpuSPerGb, color: COLORS[n] || '#888', text: `${f(r.cpuSPerGb, 2)} s/GB · ${f(r.mbPerS, 0)} MB/s` })),
      ),
    );
  }
  if (S.S3 && !S.S3.error) put('bench-s3-latency.svg', latencyChart(Object.entries(S.S3)));
  if (S.S4 && !S.S4.error) {
    put(
      'bench-s4-rss.svg',
      barChart(
        'S4: RSS per open stream (KB, lower is better)',
        'KB',
        Object.entries(S.S4)
          .filter(([, r]) => ok(r) && r.kbPerStream != null)
          .map(([n, r]) => ({ label: LABELS[n] || n, value: r.kbPerStream, color: COLORS[n] || '#888', text: `${f(r.kbPerStream)} KB · ${r.flowing}/${r.streams} flowing` })),
      ),
    );
  }
  if (S.MAP && S.MAP.policies) put('bench-stability.svg', heatmaps(S.MAP));

  const analysisFile = path.join(__dirname, 'analysis.md');
  const analysis = fs.existsSync(analysisFile) ? fs.readFileSync(analysisFile, 'utf8') : null;
  fs.writeFileSync(path.join(root, 'docs/benchmarks.md'), markdown(results, charts, analysis));
  written.push('docs/benchmarks.md');
  return written;
}

/** "overflow 100 ≤ 35 ms": streams the gateway ended itself (per-stream log), per outcome, longest duration. */
function gatewayCuts(log) {
  if (!log) return '–';
  const parts = Object.entries(log)
    .filter(([k]) => k !== 'completed' && k !== 'client_closed')
    .map(([k, v]) => `${k} ${v.n}, ≤ ${f(v.maxDurationMs / 1000, 1)} s`);
  return parts.join('; ') || 'none';
}

function markdown(res, charts, analysis) {
  const S = res.scenarios;
  const P = res.params;
  const m = res.machine;
  const out = [];
  const tidegateRan = ['S1', 'S2', 'S3', 'S4'].some((k) => S[k] && Object.keys(S[k]).some((n) => n.startsWith('tidegate') && ok(S[k][n])));
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `Generated by \`bench/run.js\`; every figure below comes from one run${res.notes && res.notes.length ? ' (except the scenarios the notes name, each repeated in a run of its own, right after)' : ''}, all systems measured side by side on the same machine. A full run (\`npm run bench\`) rewrites this page and \`docs/img/bench-*.svg\`; a quick run (\`npm run bench:quick\`) does not unless given \`--docs\`. A quick run checks that the harness works: every scenario is smaller and shorter (S1 lasts 2 s with a 700 ms stall timeout, so its slow readers are cut like stalled ones; S4 holds 500 streams for 1.5 s, so streams that have not had their first event count as not flowing; S2 moves 4 MiB per stream, so start-up and JIT warm-up weigh on its CPU per GB; S3 lasts 1 s, so it has no "after the first second" figure), and its figures are not comparable with these.`,
  );
  out.push('');
  out.push(`- **Command:** \`${res.command}\` (${res.mode} mode, ${f(res.durationS, 0)} s, ${res.startedAt})`);
  out.push(`- **Machine:** ${m.nproc} × ${m.model}, ${m.memGb} GiB RAM, Linux ${m.kernel}, Node.js ${m.node}, open-file limit ${m.fdSoft}/${m.fdHard}${m.loadavgStart ? `; load average ${m.loadavgStart.join(' / ')} at start, ${(m.loadavgEnd || []).join(' / ')} at the end` : ''}`);
  out.push(`- **Systems:** a fake OpenAI-compatible upstream (\`bench/upstream.js\`), a load generator (\`bench/load.js\`), and each proxy, as separate processes on 127.0.0.1. Baselines: ${Object.values(LABELS).slice(0, 3).join(', ')} (\`bench/baselines.js\`, \`bench/targets.js\`).`);
  out.push(`- **tidegate command:** \`node ${res.gatewayCommand}\` (defined once in \`bench/targets.js\`, \`tidegateCommand\`; the scenarios override the policy flags where they say so: S1 runs with \`--stall-timeout-ms ${P.s1?.stallTimeoutMs}\`, the stability map with \`--stall-timeout-ms ${P.map?.stallTimeoutMs}\`, and \`--overflow terminate\` in the rows so labelled)`);
  if (res.gatewayFlagsMissing) out.push(`- **Gateway flags missing in this build:** ${res.gatewayFlagsMissing.join(', ')} — tidegate ran with its built-in defaults for those.`);
  if (res.skipped.length) {
    out.push('- **Skipped:** ' + res.skipped.map((s) => `${s.target} (${s.why})`).join('; '));
  }
  for (const note of res.notes || []) out.push(`- **Note:** ${note}`);
  if (res.mode === 'quick') out.push('- **Note:** quick mode uses smaller counts and shorter durations than the issue\'s scenarios; run `npm run bench` for the full figures.');
  out.push('');
  if (!tidegateRan) {
    out.push('> tidegate itself did not run in this run (see "Skipped"): the tables below hold the baselines only. The targets section lists what tidegate has to meet.');
    out.push('');
  }

  // Targets
  out.push('## Targets');
  out.push('');
  out.push(targetsTable(res));
  out.push('');
  if (analysis) {
    out.push(analysis.trim());
    out.push('');
  }

  if (S.S1) {
    const p = P.s1;
    out.push(`## S1 — slow and stalled clients`);
    out.push('');
    out.push(`${p.clients} clients (half stalled after the first event, half reading ${p.slowBps} B/s at the TCP level), upstream ${p.rate} events/s per stream of ${Object.values(S.S1).find((r) => ok(r) && r.eventBytes)?.eventBytes ?? p.eventBytes} B on the wire (the smallest valid OpenAI chunk with CJK/emoji content), ${p.durationMs / 1000} s. tidegate runs with a 64 KiB per-stream budget and \`--stall-timeout-ms ${p.stallTimeoutMs}\`, once per overflow policy: \`pause\` (the default: the upstream is paused; a socket that accepts nothing for the stall timeout is cut: an error event is queued behind its data, and the socket is reset if it takes nothing for another stall timeout) and \`terminate\` (a stream whose backlog exceeds the budget ends at once with an error event). Under \`pause\` the clients keep their modes for the stall timeout + ${(p.stallSlackMs || 0) / 1000} s, so the stall cut can happen; then every client reads fast for the drain (≥ ${p.drainMs / 1000} s) and the bench records how its stream ended. Why the stall timeout is ${p.stallTimeoutMs / 1000} s: the gateway sees a reader's progress only when the reader's TCP window reopens, and on loopback (MSS 64 KiB) a 2 KB/s reader reopens it about once a minute (measured here with a plain socket pair: the sender's tx queue in /proc/net/tcp stood still for 61.6 s); on the Internet (MSS 1448 B) it reopens every few seconds, and the default 30 s is ample.`);
    out.push('');
    out.push(`"held/stream" is what a proxy keeps in its own (userland) memory for one stream: payload the proxy read from its upstream socket minus payload it handed to its client socket, from what the upstream wrote, the kernel queues of both links (\`/proc/net/tcp\` tx + rx) and what the client read. The queues hold wire bytes: the upstream link's are converted with the upstream's own framing ratio, and the client link's payload is counted exactly, by the client, when it reads through them (during the final drain at the latest; a stream whose client never gets that far falls back to the framing ratio of what it had read, which overstates what a proxy holds when its first writes were small chunks). It is taken in frozen snapshots (upstream and clients paused) at ${(p.snapshotsAt || [1]).map((x) => `${f((x * p.durationMs) / 1000, 1)} s`).join(', ')}, and only over streams whose sockets are still in \`/proc/net/tcp\`: a stream the proxy reset has no kernel queues left to subtract, and its bytes were dropped, not held. The column shows the largest value and how many streams were open at that snapshot.`);
    out.push('');
    out.push('How each stream ended, from the client after a final drain (it reads whatever is left): **error event** (the proxy wrote an error event and the client read it), **reset** (the proxy reset the socket, as tidegate\'s stall cut does: the kernel discards what was queued, so no error event can arrive), **done** (`[DONE]` arrived), **closed** (the connection ended, or was closing at the last snapshot, and the client read neither `[DONE]` nor an error event by the end of the drain: in quick mode\'s 1.5 s drain on a busy machine a slow stream\'s error event can still be unread), **open** (still open when the drain ended).');
    out.push('');
    out.push(
      S.S1.error
        ? `S1 failed: ${S.S1.error}`
        : mdTable(
            ['system', 'idle RSS', 'peak RSS − idle', 'held/stream (max while open)', 'peak budget use (gateway log)', 'upstream produced/stream (mean of nominal)', 'stalled: cut with an error event', 'stalled: cut (reset)', 'slow: cut with an error event', 'slow: cut (reset)', 'slow: done (after drain)', 'streams the gateway ended (log)', 'kernel TCP memory, peak'],
            Object.entries(S.S1).map(([n, r]) =>
              ok(r)
                ? [
                    LABELS[n] || n,
                    `${f(r.idleRssMb)} MB`,
                    `**${f(r.rssDeltaMb)} MB**`,
                    !r.heldStreams ? 'n/a (no stream open at a snapshot)' : `${fmtB(r.heldPerStreamMaxB)} (${r.heldStreams} open${r.heldAtMs != null ? ` at ${f(r.heldAtMs / 1000, 1)} s` : ''})`,
                    r.streamLog ? fmtB(Math.max(0, ...Object.values(r.streamLog).map((v) => v.maxPeakBufferedBytes || 0))) : '–',
                    `${fmtB(r.producedPerStreamMeanB)} of ${fmtB(r.nominalPerStreamB)}`,
                    `${r.stalledCutWithError}/${r.stalledTotal}`,
                    `${r.stalledReset ?? 'n/a'}/${r.stalledTotal}${endedHow(r, 'stalled') ? ` (${endedHow(r, 'stalled')})` : ''}`,
                    `${r.slowErrored}/${r.slowTotal}`,
                    `${r.slowReset ?? 'n/a'}/${r.slowTotal}${endedHow(r, 'slow') ? ` (${endedHow(r, 'slow')})` : ''}`,
                    `${r.slowCompleted}/${r.slowTotal}${r.drainedMs != null ? ` (drain ${f(r.drainedMs / 1000, 1)} s)` : ''}`,
                    gatewayCuts(r.streamLog),
                    kernelTcpCell(r.kernelTcp),
                  ]
                : [LABELS[n] || n, `error: ${esc(r.error).slice(0, 120)}`, '', '', '', '', '', '', '', '', '', '', ''],
            ),
          ),
    );
    out.push('');
    const pressure = Object.values(S.S1).find((r) => ok(r) && r.kernelTcp && r.kernelTcp.pressureMb)?.kernelTcp.pressureMb;
    if (pressure) {
      out.push(`"kernel TCP memory" is what every TCP socket on the machine held at its peak during the row's run (\`/proc/net/sockstat\`), against \`tcp_mem\`'s pressure threshold, ${f(pressure / 1000, 2)} GB here. The megabytes each stream's upstream produced beyond what the proxy holds sit in the kernel's socket buffers (the upstream's send queue, the proxy's receive and send queues, the client's receive queue), and \`pause\` keeps them there for the whole hold. Past the threshold Linux shrinks receive windows, may prune receive queues and drop segments, and a sender then waits out a backed-off retransmission or window-probe timer: a stream can sit still for seconds with its proxy holding nothing and asking for more (the gateway's \`GET /debug/streams\` shows it: the bridge requesting, the upstream body flowing and empty). The drain therefore ends when every stream has ended, or after ${f((p.drainIdleMs || 1000) / 1000, 0)} s in which no client got a byte (at most ${f((p.maxDrainMs || 0) / 1000, 0)} s in all); streams still open then are watched for ${f((p.lateMs || 0) / 1000, 0)} s more, with the gateway's view of each and the upstream links' queues and retransmission timers (\`openAfterDrainLate\` in the results JSON).`);
      out.push('');
    }
    if (charts['bench-s1-rss.svg']) out.push('![S1 RSS over time](img/bench-s1-rss.svg)\n');
  }
  if (S.S2) {
    const p = P.s2;
    out.push('## S2 — fast clients, unlimited upstream');
    out.push('');
    out.push(`${p.clients} clients reading as fast as they can; the upstream writes ${fmtB(p.bytesPerStream)} per stream as fast as the socket takes it. CPU is the proxy's user+system time from \`/proc/<pid>/stat\` (nginx: master + worker). U+FFFD counts replacement characters in what clients received (the text is CJK + emoji, split at arbitrary TCP boundaries).`);
    out.push('');
    out.push(
      S.S2.error
        ? `S2 failed: ${S.S2.error}`
        : mdTable(
            ['system', 'MB/s', 'CPU s', 'CPU s/GB', 'U+FFFD', 'completed'],
            Object.entries(S.S2).map(([n, r]) => (ok(r) ? [LABELS[n] || n, f(r.mbPerS, 0), f(r.cpuS, 2), `**${f(r.cpuSPerGb, 2)}**`, r.fffd, `${r.completed}/${r.total}`] : [LABELS[n] || n, `error: ${esc(r.error).slice(0, 120)}`, '', '', '', ''])),
          ),
    );
    out.push('');
    if (charts['bench-s2-cpu.svg']) out.push('![S2 CPU per GB](img/bench-s2-cpu.svg)\n');
    out.push('The load generator and the upstream share the same cores as the proxy, so MB/s is bounded by the machine, not only by the proxy; CPU s/GB is the fairer comparison.');
    out.push('');
  }
  if (S.S3) {
    const p = P.s3;
    const latencyTable = (rows) =>
      rows.error
        ? `failed: ${rows.error}`
        : mdTable(
            ['system', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p99 after each stream\'s first second, ms', 'events', 'completed'],
            Object.entries(rows).map(([n, r]) => (ok(r) ? [LABELS[n] || n, f(r.p50, 2), f(r.p90, 2), `**${f(r.p99, 2)}**`, f(r.max, 1), r.steady ? f(r.steady.p99, 2) : 'n/a', r.n, `${r.completed}/${r.total}`] : [LABELS[n] || n, `error: ${esc(r.error).slice(0, 120)}`, '', '', '', '', '', ''])),
          );
    out.push('## S3 — latency');
    out.push('');
    out.push(`${p.clients} clients × ${p.rate} events/s for ${p.durationMs / 1000} s. Each event carries its emit time (\`performance.timeOrigin + performance.now()\` in the upstream); the client subtracts it from its own clock at receipt. "direct" connects to the upstream without a proxy: it is the floor set by the load generator and the upstream themselves. Each stream emits on its own 10 ms schedule, with phases spread as the connections arrived (the upstream ticks every 1 ms), as independent model streams do; the target is checked on this table. Each system first serves the same load for ${(p.warmupMs || 0) / 1000} s, unmeasured (JIT warm-up); the measured run then opens ${p.clients} new streams at once, whose setup falls in their first second (the column that leaves it out).`);
    out.push('');
    out.push(latencyTable(S.S3));
    out.push('');
    if (charts['bench-s3-latency.svg']) out.push('![S3 latency](img/bench-s3-latency.svg)\n');
    if (S.S3burst) {
      out.push('**S3 burst:** the same load, but the upstream ticks every 10 ms and emits one event on all 100 streams at once, so each proxy, and the load generator, handles 100 events back to back; the p99 measures that batch (not checked against the target).');
      out.push('');
      out.push(latencyTable(S.S3burst));
      out.push('');
    }
  }
  if (S.S4) {
    const p = P.s4;
    out.push('## S4 — many idle-ish streams');
    out.push('');
    out.push(`${p.streams} concurrent streams of 1 event/s (the open-file limit is ${m.fdHard}; a proxy holds two descriptors per stream), opened in batches of 200 every 100 ms, checked ${p.holdMs / 1000} s after the last one opened. "flowing" = received an event in the last 2.5 s and not ended. KB/stream = (RSS − idle RSS) / open streams.`);
    out.push('');
    out.push(
      S.S4.error
        ? `S4 failed: ${S.S4.error}`
        : mdTable(
            ['system', 'open', 'flowing', 'failed', 'RSS', 'KB/stream'],
            Object.entries(S.S4).map(([n, r]) => (ok(r) ? [LABELS[n] || n, r.open, r.flowing, r.failed, `${f(r.rssMb, 0)} MB`, `**${f(r.kbPerStream)}**`] : [LABELS[n] || n, `error: ${esc(r.error).slice(0, 120)}`, '', '', '', ''])),
          ),
    );
    out.push('');
    if (charts['bench-s4-rss.svg']) out.push('![S4 RSS per stream](img/bench-s4-rss.svg)\n');
  }
  if (S.MAP && S.MAP.policies) {
    const mp = S.MAP;
    out.push('## Stability map');
    out.push('');
    out.push(`Producer rate and consumer rate as two independent variables: every cell runs ${mp.streams} concurrent streams for ${mp.cellMs / 1000} s at one upstream rate (rows, events/s of ~150 B) and one client read rate (columns), then classifies the cell: **completed** (every stream got \`[DONE]\`), **upstream slowed, bounded** (no error, the proxy holds ≤ 4× the 64 KiB budget per stream, the producer was paused), **terminated** (the proxy ended streams: with an error event, e.g. overflow; with a reset, which is how tidegate's stall cut ends a socket that reads nothing; or with a plain close), **memory grew** (the userland backlog of a stream still open at the end of the cell exceeded 4× the budget, or the proxy's RSS grew > 100 MB in the cell). The backlog is measured as in S1; the kernel queues of a stream the proxy reset are gone with the reset, so such a stream counts as cut, never as held memory.`);
    out.push('');
    out.push(`Real LLM token rates (20–200 tokens/s) are far below what loopback socket buffers absorb in a few seconds (the kernel autotunes the send buffer of a stalled stream up to \`tcp_wmem\` max, megabytes), so the rows are scaled up (hundreds to tens of thousands of events/s) to compress minutes of streaming into one cell; the boundary is the ratio of producer to consumer rate, which the scaling keeps. tidegate runs here with \`stallTimeoutMs\` ${P.map.stallTimeoutMs} ms, so that a stall cut fits in a cell; on loopback a 4 KiB/s reader moves its TCP window only every half minute or so (see S1), so where its socket fills, \`pause\` cuts it like a stalled one (at 50,000 events/s some 64 KiB/s readers too: their window steps come every second or two). With a real MSS, or a stall timeout above that gap, those cells read "slowed".`);
    out.push('');
    if (charts['bench-stability.svg']) out.push('![Stability heatmaps](img/bench-stability.svg)\n');
    for (const [name, cells] of Object.entries(mp.policies)) {
      out.push(`**${name}**`);
      out.push('');
      out.push(
        mdTable(
          ['producer \\ consumer', ...mp.consumers.map(consumerLabel)],
          mp.producers.map((r) => [
            `${r} ev/s`,
            ...mp.consumers.map((c) => {
              const cell = cells.find((x) => x.rate === r && x.consumer === c);
              if (!cell) return 'n/a';
              const extra = cell.state === 'terminated' ? ` ${cutText(cell)}` : cell.state === 'grew' ? ` ${cell.heldMaxB != null ? fmtB(cell.heldMaxB) : `RSS +${f(cell.rssGrowthMb, 0)} MB`}` : '';
              return `${cell.state}${extra} (up ${f((cell.producedRatio || 0) * 100, 0)}%)`;
            }),
          ]),
        ),
      );
      out.push('');
    }
    out.push('"up N%" = bytes the upstream managed to write as a share of what it would write unthrottled.');
    out.push('');
  }
  if (S.MICRO) {
    out.push('## Micro-benchmarks');
    out.push('');
    const fl = S.MICRO.flow;
    if (fl && fl.flowOpsPerS) {
      out.push(`Flow core (\`src/flow\`, against the same chain in plain RxJS): ${fl.elements.toLocaleString('en')} elements, median of ${fl.runs} interleaved runs.`);
      out.push('');
      out.push(
        mdTable(
          ['chain', 'elements/s'],
          [
            ['`fromIterable → limitRate(256) → onBackpressureBuffer({maxBytes}) → request(64) at a time`', Math.round(fl.flowOpsPerS).toLocaleString('en')],
            ['RxJS `from(array).pipe(map(x => x))`', Math.round(fl.rxOpsPerS).toLocaleString('en')],
            ['cost of demand (Flow time / RxJS time; target ≤ 3×)', `**${fl.ratio.toFixed(2)}×**`],
          ],
        ),
      );
    } else out.push(`Flow micro-benchmark skipped: ${esc((fl && fl.skipped) || 'no result')}`);
    out.push('');
    const pr = S.MICRO.parser;
    if (pr && pr.stdout) {
      out.push(`SSE parser (\`src/sse/codec/parser.ts\`, against eventsource-parser), output of \`${pr.file}\`:`);
      out.push('');
      out.push('```');
      out.push(pr.stdout);
      out.push('```');
    } else out.push(`SSE parser benchmark skipped: ${esc((pr && pr.skipped) || 'no result')}`);
    out.push('');
  }
  out.push('## Method and caveats');
  out.push('');
  out.push('- Everything runs on one machine: upstream, load generator and proxy compete for the same cores; ratios within one run are meaningful, absolute numbers less so.');
  out.push('- "Slow" clients read through a fixed 512-byte buffer (`net.connect({onread})`) and pause the socket when over budget, so the proxy sees a full TCP window. Node cannot set `SO_RCVBUF`, so the client kernel still buffers up to its autotuned receive window (tens to hundreds of KiB); that memory is the kernel\'s, not the proxy\'s, and is subtracted in "held/stream". A client paused this way does not notice a reset until it reads again, so the bench takes the link state from `/proc/net/tcp` (a reset socket is gone from it) and from the final drain (`ECONNRESET`).');
  out.push('- Peak RSS is sampled every 100 ms from `/proc/<pid>/status` (VmRSS), CPU from `/proc/<pid>/stat` (utime + stime); for nginx the master and its worker are summed.');
  out.push('- Part of a run, and profiles: `node bench/run.js --only S1,S3 --targets tidegate-openai,pipeline --no-docs` runs those scenarios and systems only (the page is left alone); `BENCH_PARAMS=\'{"s2":{"bytesPerStream":41943040}}\'` overrides a scenario\'s parameters; `BENCH_GATEWAY_NODE_FLAGS` and `BENCH_BASELINE_NODE_FLAGS` pass Node flags to the gateway and to the Node baselines (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`); `BENCH_GATEWAY_CLI` benchmarks another build of the gateway.');
  out.push('- With the byte relay (the default) tidegate forwards the upstream’s own event bytes on both routes; with `--relay events` it re-encodes events, so bytes in and out of a stream may differ slightly and "held/stream" is then approximate.');
  out.push('- Reproduce: `npm run bench:quick` (< 2 min) or `npm run bench` (about 17 min); raw JSON in `bench/results/` (git-ignored). `node bench/run.js --only S1,S3 --targets nginx,tidegate-pass` runs a subset.');
  out.push('');
  return out.join('\n');
}

function targetsTable(res) {
  const S = res.scenarios;
  const rows = [];
  const get = (k, n) => (S[k] && ok(S[k][n]) ? S[k][n] : null);
  const pipeS2 = get('S2', 'pipeline');
  for (const n of ['tidegate-pass', 'tidegate-openai']) {
    const s1 = get('S1', n);
    const s1t = get('S1', `${n}+terminate`);
    const s2 = get('S2', n);
    const s3 = get('S3', n);
    const s4 = get('S4', n);
    const label = LABELS[n];
    const verdict = (c) => (c == null ? 'not run' : c ? 'met' : '**missed**');
    if (n === 'tidegate-pass' || s1) {
      rows.push([label, 'S1 peak RSS − idle ≤ 40 MB', s1 ? `${f(s1.rssDeltaMb)} MB` : 'n/a', verdict(s1 && s1.rssDeltaMb <= 40)]);
      const heldKnown = s1 && s1.heldStreams > 0;
      rows.push([label, 'S1 held/stream ≤ 64 KiB (bench-side, streams open at a snapshot: read from upstream − handed to the client socket)', heldKnown ? `${fmtB(s1.heldPerStreamMaxB)} (${s1.heldStreams} open)` : 'n/a (no stream open at a snapshot)', heldKnown ? verdict(s1.heldPerStreamMaxB <= 65536) : 'n/a']);
      if (s1t) rows.push([`${label}, terminate`, 'S1 peak RSS − idle ≤ 40 MB', `${f(s1t.rssDeltaMb)} MB`, verdict(s1t.rssDeltaMb <= 40)]);
      const budgetPeak = (r) => (r && r.streamLog ? Math.max(0, ...Object.values(r.streamLog).map((v) => v.maxPeakBufferedBytes || 0)) : null);
      if (s1) rows.push([label, 'S1 gateway-accounted bytes/stream ≤ 64 KiB (log peakBufferedBytes)', fmtB(budgetPeak(s1)), verdict(budgetPeak(s1) <= 65536)]);
      const cutHow = (r) => `${r.stalledCutWithError}/${r.stalledTotal} with an error event, ${r.stalledReset ?? 'n/a'}/${r.stalledTotal} reset; gateway: ${gatewayCuts(r.streamLog)}`;
      rows.push([label, 'S1 every stalled stream cut with an error event (pause)', s1 ? cutHow(s1) : 'n/a', verdict(s1 && s1.stalledCutWithError === s1.stalledTotal)]);
      if (s1t) rows.push([`${label}, terminate`, 'S1 every stalled stream cut with an error event', cutHow(s1t), verdict(s1t.stalledCutWithError === s1t.stalledTotal)]);
      rows.push([label, 'S1 slow streams all complete (pause)', s1 ? `${s1.slowCompleted}/${s1.slowTotal} done, ${s1.slowErrored} cut with an error event, ${s1.slowReset ?? 'n/a'} reset` : 'n/a', verdict(s1 && s1.slowCompleted === s1.slowTotal)]);
    }
    const cap = n === 'tidegate-pass' ? 1 : 1.5;
    rows.push([label, `S2 CPU s/GB ≤ ${cap === 1 ? '' : '1.5 × '}pipeline() proxy${pipeS2 ? ` (${f(pipeS2.cpuSPerGb, 2)})` : ''}`, s2 ? f(s2.cpuSPerGb, 2) : 'n/a', verdict(s2 && pipeS2 ? s2.cpuSPerGb <= cap * pipeS2.cpuSPerGb : null)]);
    rows.push([label, 'S2 zero U+FFFD', s2 ? String(s2.fffd) : 'n/a', verdict(s2 && s2.fffd === 0)]);
    rows.push([label, 'S3 p99 ≤ 2 ms (each stream on its own schedule, every event counted)', s3 ? `${f(s3.p99, 2)} ms${s3.steady ? ` (${f(s3.steady.p99, 2)} after each stream's first second)` : ''}` : 'n/a', verdict(s3 && s3.p99 <= 2)]);
    rows.push([label, `S4 all ${res.params.s4.streams} streams flowing, ≤ 30 KB/stream`, s4 ? `${s4.flowing} flowing, ${f(s4.kbPerStream)} KB` : 'n/a', verdict(s4 && s4.flowing >= res.params.s4.streams && s4.kbPerStream <= 30)]);
  }
  return mdTable(['system', 'target', 'measured', 'verdict'], rows);
}

module.exports = { write, markdown };
