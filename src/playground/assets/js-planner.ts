/** The capacity planner. Part of the page script (see `js.ts`): plain ES2020 inside its closure. */
export const PAGE_PLANNER = String.raw`
  // ---- capacity planner ------------------------------------------------------------------

  var planner = {};
  function buildPlanner() {
    var p = $('#planner');
    p.appendChild(el('h2', { text: 'Capacity planner' }));
    p.appendChild(el('div', { class: 'formula' }, ['Per-stream budget ', el('b', { text: 'n ≤ M / (C × S × k)' }),
      ' events; it absorbs a producer/consumer gap for ', el('b', { text: 'n × S / (P × S − R)' }), ' seconds. The live runs check the estimate.']));
    var row = el('div', { class: 'row' });
    [['M', 'M heap share (MiB)', 512, 1, 65536], ['C', 'C streams', 1000, 1, 1000000], ['S', 'S avg event (B)', 180, 1, 1048576],
     ['k', 'k overhead', 2, 0.1, 100], ['P', 'P producer (tokens/s)', 300, 1, 5000], ['R', 'R client (B/s)', 4096, 0, 10485760]].forEach(function (d) {
      var i = el('input', { type: 'number', value: d[2], min: d[3], max: d[4], step: d[0] === 'k' ? 0.1 : 1 });
      i.id = 'plan-' + d[0];
      i.addEventListener('input', renderPlanner);
      planner[d[0]] = i;
      row.appendChild(el('label', { for: i.id }, [d[1], i]));
    });
    var useS = el('button', { type: 'button', id: 'plan-use-measured', text: 'use measured S' });
    useS.addEventListener('click', function () {
      var s = runs.a && runs.a.panel.lastSample;
      if (s && s.avgEventBytes) { planner.S.value = s.avgEventBytes; renderPlanner(); }
    });
    row.appendChild(useS);
    p.appendChild(row);
    planner.out = el('div', { class: 'out' });
    p.appendChild(planner.out);
    planner.live = el('table', { class: 'live' });
    p.appendChild(planner.live);
    renderPlanner();
  }
  function plan() {
    var M = Number(planner.M.value) * 1048576, C = Number(planner.C.value), S = Number(planner.S.value), k = Number(planner.k.value);
    var P = Number(planner.P.value), R = Number(planner.R.value);
    var n = Math.floor(M / (C * S * k));
    var gap = P * S - R;
    return { n: n, bytes: n * S, gap: gap, seconds: gap > 0 ? (n * S) / gap : Infinity };
  }
  function renderPlanner() {
    var r = plan();
    planner.out.textContent = '';
    [[String(r.n), 'events per stream (n)'], [fmtBytes(r.bytes), 'per-stream byte budget (n × S)'],
     [(r.gap > 0 ? fmtBytes(r.gap) : '≤ 0 B') + '/s', 'rate gap (P × S − R)'], [fmtSec(r.seconds), 'absorbed before overflow']].forEach(function (x) {
      planner.out.appendChild(el('div', null, [el('b', { text: x[0], 'data-plan': x[1] }), el('span', { text: x[1] })]));
    });
    updateLive();
  }
  function plannerFromScenario(s) {
    planner.P.value = s.producerTokensPerSec;
    planner.R.value = s.consumerBytesPerSec;
    renderPlanner();
  }
  function updateLive() {
    if (!planner.live) return;
    planner.live.textContent = '';
    planner.live.appendChild(el('tr', null, [el('th', { text: 'live run' }), el('th', { text: 'its budget' }), el('th', { text: 'measured S' }),
      el('th', { text: 'estimate: budget ÷ gap' }), el('th', { text: 'measured: first overflow at' }), el('th', { text: 'peak held' })]));
    Object.keys(runs).forEach(function (slot) {
      var s = runs[slot].panel.lastSample;
      if (!s) return;
      var sc = runs[slot].panel.scenario;
      var S = s.avgEventBytes || Number(planner.S.value);
      var gap = sc.producerTokensPerSec * S - sc.consumerBytesPerSec;
      var est = gap > 0 ? s.budgetBytes / gap : Infinity;
      planner.live.appendChild(el('tr', { 'data-live': slot }, [el('td', { text: slot.toUpperCase() }), el('td', { text: fmtBytes(s.budgetBytes) }),
        el('td', { text: s.avgEventBytes ? s.avgEventBytes + ' B' : '–' }), el('td', { text: fmtSec(est), 'data-estimate-s': String(est) }),
        el('td', { text: s.firstOverflowMs === null ? (s.state === 'finished' ? 'none' : '…') : fmtSec(s.firstOverflowMs / 1000), 'data-measured-s': s.firstOverflowMs === null ? '' : String(s.firstOverflowMs / 1000) }),
        el('td', { text: fmtBytes(s.peakHeldBytes) })]));
    });
  }

`;
