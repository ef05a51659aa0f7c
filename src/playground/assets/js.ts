/**
 * The playground page's script: plain ES2020, no modules, no dependencies. It posts scenarios,
 * reads each run's data stream with `fetch()` (the text panel) and its telemetry with
 * `EventSource`, and draws small inline SVG charts. Rendered numbers are mirrored in `data-*`
 * attributes (`data-peak`, `data-budget`, `data-outcome`) so tests read what the page drew.
 */
export const PLAYGROUND_JS = String.raw`(function () {
  'use strict';
  var BASE = document.body.getAttribute('data-base') || '';
  var WINDOW = 300; // samples kept per chart (30 s at 100 ms)
  var SVGNS = 'http://www.w3.org/2000/svg';
  var runs = {};

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') e.textContent = attrs[k];
      else if (attrs[k] !== undefined && attrs[k] !== null && attrs[k] !== false) e.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function $(sel, root) { return (root || document).querySelector(sel); }
  function fmtBytes(n) {
    if (n === null || n === undefined) return '–';
    if (n < 1024) return Math.round(n) + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + ' KiB';
    return (n / 1048576).toFixed(1) + ' MiB';
  }
  function fmtDemand(n) { return n === null ? '∞' : (n === undefined ? '–' : String(n)); }
  function fmtSec(s) { return s === Infinity ? '∞' : (s < 10 ? s.toFixed(2) : s.toFixed(1)) + ' s'; }

  // ---- scenario forms -------------------------------------------------------------------

  function field(slot, name, label, input) {
    input.id = slot + '-' + name;
    input.name = name;
    return el('label', { for: input.id }, [label, input]);
  }
  function num(value, min, max, step) { return el('input', { type: 'number', value: value, min: min, max: max, step: step || 1 }); }
  function check(on) { var c = el('input', { type: 'checkbox' }); c.checked = !!on; return c; }
  function select(options, value) {
    var s = el('select');
    options.forEach(function (o) { var opt = el('option', { value: o[0], text: o[1] }); if (o[0] === value) opt.selected = true; s.appendChild(opt); });
    return s;
  }

  function scenarioForm(slot, title) {
    var f = el('fieldset', { id: 'scenario-' + slot, 'data-slot': slot }, [el('legend', { text: title })]);
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'label', 'Label', el('input', { type: 'text', maxlength: 60 })),
      field(slot, 'duration', 'Run (s)', num(20, 1, 60)),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'producer', 'Producer (tokens/s)', num(300, 1, 5000)),
      field(slot, 'consumer', 'Client reads (B/s)', num(4096, 0, 10485760, 256)),
      field(slot, 'stalled', 'stalled', check(false)),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'lr', 'limitRate', check(false)),
      field(slot, 'high', 'highTide', num(32, 1, 4096)),
      field(slot, 'low', 'lowTide', num(24, 0, 4096)),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'strategy', 'Operator', select([
        ['none', 'none (pure demand: the producer pauses)'],
        ['buffer', 'onBackpressureBuffer'],
        ['drop', 'onBackpressureDrop'],
        ['latest', 'onBackpressureLatest'],
      ], 'buffer')),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'bounded', 'byte budget (unchecked: unbounded, demo cap 8 MiB)', check(true)),
      field(slot, 'overflow', 'overflow', select([
        ['terminate', "'terminate'"], ['error', "'error' (Reactor default)"], ['drop-latest', "'drop-latest'"], ['drop-oldest', "'drop-oldest'"],
      ], 'terminate')),
      field(slot, 'budget', 'Stream budget (KiB)', num(64, 32, 4096)),
    ]));
    return f;
  }

  function input(slot, name) { return document.getElementById(slot + '-' + name); }
  function readScenario(slot) {
    var stalled = input(slot, 'stalled').checked;
    var s = {
      label: input(slot, 'label').value || ('Scenario ' + slot.toUpperCase()),
      producerTokensPerSec: Number(input(slot, 'producer').value),
      consumerBytesPerSec: stalled ? 0 : Number(input(slot, 'consumer').value),
      limitRate: input(slot, 'lr').checked ? { highTide: Number(input(slot, 'high').value), lowTide: Number(input(slot, 'low').value) } : null,
      strategy: input(slot, 'strategy').value,
      buffer: { bounded: input(slot, 'bounded').checked, overflow: input(slot, 'overflow').value },
      budgetBytes: Number(input(slot, 'budget').value) * 1024,
      durationSec: Number(input(slot, 'duration').value),
    };
    return s;
  }
  function writeScenario(slot, s) {
    input(slot, 'label').value = s.label || '';
    input(slot, 'producer').value = s.producer;
    input(slot, 'consumer').value = s.consumer || 4096;
    input(slot, 'stalled').checked = s.consumer === 0;
    input(slot, 'lr').checked = !!s.lr;
    if (s.lr) { input(slot, 'high').value = s.lr[0]; input(slot, 'low').value = s.lr[1]; }
    input(slot, 'strategy').value = s.strategy;
    input(slot, 'bounded').checked = s.bounded !== false;
    input(slot, 'overflow').value = s.overflow || 'terminate';
    input(slot, 'budget').value = s.budgetKiB || 64;
    input(slot, 'duration').value = s.duration || 20;
  }

  var PRESETS = [
    { id: 'stalled-terminate', text: 'Stalled client + terminate', a: { label: 'stalled client, byte budget + terminate', producer: 300, consumer: 0, strategy: 'buffer', overflow: 'terminate' } },
    { id: 'unbounded-vs-budget', text: 'Unbounded buffer vs budget + terminate', compare: true,
      a: { label: 'unbounded buffer', producer: 400, consumer: 4096, strategy: 'buffer', bounded: false, duration: 30 },
      b: { label: 'byte budget + terminate', producer: 400, consumer: 4096, strategy: 'buffer', overflow: 'terminate', duration: 30 } },
    { id: 'error-vs-terminate', text: "Reactor 'error' (after the backlog) vs 'terminate'", compare: true,
      a: { label: "Reactor default: 'error' after the backlog", producer: 300, consumer: 6144, strategy: 'buffer', overflow: 'error' },
      b: { label: "'terminate' at once", producer: 300, consumer: 6144, strategy: 'buffer', overflow: 'terminate' } },
    { id: 'pause-vs-drop', text: 'Pure demand (pause) vs drop', compare: true,
      a: { label: 'pure demand: the producer pauses', producer: 300, consumer: 8192, strategy: 'none' },
      b: { label: 'onBackpressureDrop', producer: 300, consumer: 8192, strategy: 'drop' } },
    { id: 'limit-rate', text: 'limitRate shapes the requests', a: { label: 'limitRate(32, 8), pure demand', producer: 300, consumer: 8192, strategy: 'none', lr: [32, 8] } },
  ];

  function applyPreset(p) {
    writeScenario('a', p.a);
    if (p.b) writeScenario('b', p.b);
    setCompare(!!p.compare);
  }
  function setCompare(on) {
    $('#compare').checked = on;
    $('#scenario-b').hidden = !on;
  }

  // ---- charts ---------------------------------------------------------------------------

  function Chart(opts) {
    this.opts = opts;
    this.series = opts.series.map(function () { return []; });
    this.peak = 0;
    this.svg = document.createElementNS(SVGNS, 'svg');
    this.svg.setAttribute('viewBox', '0 0 300 ' + (opts.height || 64));
    this.svg.setAttribute('preserveAspectRatio', 'none');
    this.lines = opts.series.map(function (s) {
      var p = document.createElementNS(SVGNS, 'polyline');
      p.setAttribute('fill', 'none');
      p.setAttribute('stroke', s.color);
      p.setAttribute('stroke-width', s.width || 1.6);
      p.setAttribute('vector-effect', 'non-scaling-stroke');
      return p;
    });
    this.limitLine = document.createElementNS(SVGNS, 'line');
    this.limitLine.setAttribute('stroke', opts.limitColor || '#d4500f');
    this.limitLine.setAttribute('stroke-dasharray', '4 3');
    this.limitLine.setAttribute('vector-effect', 'non-scaling-stroke');
    this.svg.appendChild(this.limitLine);
    var svg = this.svg;
    this.lines.forEach(function (l) { svg.appendChild(l); });
    this.root = el('div', { class: 'chart' + (opts.small ? ' small' : ''), 'data-chart': opts.name });
    this.label = el('span');
    this.root.appendChild(el('div', { class: 'title' }, [el('span', { text: opts.title }), this.label]));
    this.root.appendChild(this.svg);
    this.setLimit(opts.limit);
  }
  Chart.prototype.setLimit = function (limit) {
    this.limit = limit;
    if (limit !== undefined && limit !== null) this.root.setAttribute('data-budget', String(limit));
  };
  Chart.prototype.push = function (values, label) {
    for (var i = 0; i < values.length; i++) {
      var v = values[i] === null || values[i] === undefined ? 0 : values[i];
      this.series[i].push(v);
      if (this.series[i].length > WINDOW) this.series[i].shift();
      if (i === 0 && v > this.peak) this.peak = v;
    }
    this.root.setAttribute('data-peak', String(this.peak));
    this.root.setAttribute('data-last', String(values[0] === null ? 'Infinity' : values[0]));
    this.root.setAttribute('data-samples', String(this.series[0].length));
    if (label !== undefined) this.label.textContent = label;
    this.draw();
  };
  Chart.prototype.draw = function () {
    var h = this.opts.height || 64;
    var max = this.opts.fixedMax || 1;
    if (!this.opts.fixedMax) {
      this.series.forEach(function (s) { s.forEach(function (v) { if (v > max) max = v; }); });
      if (this.limit) max = Math.max(max, this.limit * 1.08);
    }
    var len = this.series[0].length;
    var step = 300 / Math.max(len - 1, 50); // at least 5 s wide, growing to the 30 s window
    this.series.forEach(function (s, i) {
      var pts = [];
      for (var j = 0; j < s.length; j++) pts.push((j * step).toFixed(1) + ',' + (h - 2 - (s[j] / max) * (h - 4)).toFixed(1));
      this.lines[i].setAttribute('points', pts.join(' '));
    }, this);
    if (this.limit) {
      var y = (h - 2 - (this.limit / max) * (h - 4)).toFixed(1);
      this.limitLine.setAttribute('x1', '0'); this.limitLine.setAttribute('x2', '300');
      this.limitLine.setAttribute('y1', y); this.limitLine.setAttribute('y2', y);
    }
  };

  // ---- run panels -----------------------------------------------------------------------

  function figure(name, label) {
    var b = el('b', { 'data-figure': name, text: '–' });
    return { root: el('div', null, [b, el('span', { text: label })]), b: b };
  }

  function RunPanel(slot, scenario) {
    this.slot = slot;
    this.scenario = scenario;
    this.text = '';
    this.root = el('article', { class: 'run', 'data-slot': slot });
    this.status = el('span', { class: 'status', 'data-state': 'waiting', text: 'starting' });
    this.root.appendChild(el('h2', null, [slot.toUpperCase() + ' · ' + scenario.label, this.status]));
    this.desc = el('div', { class: 'desc' });
    this.root.appendChild(this.desc);
    var figs = {};
    var wrap = el('div', { class: 'figures' });
    [['held', 'held now / budget'], ['peak', 'peak held'], ['writable', 'res.writableLength'], ['producer', 'tokens produced'],
     ['paused', 'upstream'], ['read', 'client has read'], ['events', 'events to bridge'], ['lost', 'dropped / overflowed']].forEach(function (f) {
      figs[f[0]] = figure(f[0], f[1]); wrap.appendChild(figs[f[0]].root);
    });
    this.figs = figs;
    this.root.appendChild(wrap);
    var budget = scenario.budgetBytes;
    this.charts = {
      held: new Chart({ name: 'held', title: 'bytes held in the chain vs budget (dashed)', limit: budget,
        series: [{ color: '#8250df', width: 2 }, { color: '#1f6feb' }] }),
      writable: new Chart({ name: 'writable', title: 'res.writableLength vs 16 KiB highWaterMark', limit: 16384, limitColor: '#999',
        series: [{ color: '#1a7f37', width: 2 }] }),
      rate: new Chart({ name: 'rate', title: 'tokens/s produced (blue) · bytes/s read ÷ avg event (green)', series: [{ color: '#1f6feb' }, { color: '#1a7f37' }] }),
      paused: new Chart({ name: 'paused', title: 'upstream paused (no demand)', small: true, height: 34, fixedMax: 1.05, series: [{ color: '#d4500f', width: 2 }] }),
    };
    var charts = el('div', { class: 'charts' });
    for (var k in this.charts) charts.appendChild(this.charts[k].root);
    this.root.appendChild(charts);
    this.stageTable = el('table', { class: 'stages' }, [el('thead', null, [el('tr', null, [
      el('th', { text: 'stage (producer → client)' }), el('th', { text: 'outstanding demand' }), el('th', { text: 'buffered' }), el('th', { text: 'demand over time' })])])]);
    this.stageBody = el('tbody');
    this.stageTable.appendChild(this.stageBody);
    this.stageRows = [];
    this.root.appendChild(this.stageTable);
    this.received = el('pre', { class: 'received', 'data-received': '0',
      text: scenario.consumerBytesPerSec === 0 ? '(nothing: this client reads nothing, so every byte stays in the buffers above)' : '' });
    this.notes = el('ul', { class: 'notes' });
    this.root.appendChild(el('div', { class: 'lower' }, [
      el('div', null, [el('div', { class: 'sub', text: 'received text (what the browser got)' }), this.received]),
      el('div', null, [el('div', { class: 'sub', text: 'events' }), this.notes]),
    ]));
    this.lastSample = null;
    this.prev = null;
  }

  RunPanel.prototype.ensureStages = function (stages) {
    if (this.stageRows.length === stages.length) return;
    this.stageBody.textContent = '';
    this.stageRows = stages.map(function (st, i) {
      var demand = el('td', { class: 'num' }); var buf = el('td', { class: 'num' });
      var chart = new Chart({ name: 'demand-' + i, title: '', small: true, height: 22, series: [{ color: '#1f6feb' }] });
      var spark = el('td', { class: 'spark' }, [chart.svg]);
      chart.root = spark; // mirror data-* on the cell
      spark.setAttribute('data-chart', 'demand-' + i);
      var row = el('tr', { 'data-stage': String(i) }, [el('td', { text: st.name }), demand, buf, spark]);
      this.stageBody.appendChild(row);
      return { demand: demand, buf: buf, chart: chart };
    }, this);
  };

  RunPanel.prototype.update = function (s) {
    this.lastSample = s;
    var state = s.state;
    this.status.setAttribute('data-state', state);
    if (s.outcome) this.status.setAttribute('data-outcome', s.outcome.outcome);
    this.status.textContent = s.outcome ? (s.outcome.outcome + (s.outcome.code ? ' · ' + s.outcome.code : '')) : state;
    this.root.setAttribute('data-state', state);
    this.root.setAttribute('data-peak-held', String(s.peakHeldBytes));
    this.root.setAttribute('data-budget', String(s.budgetBytes));
    if (s.notes.length) this.desc.textContent = s.notes[0].message;
    var f = this.figs;
    f.held.b.textContent = fmtBytes(s.heldBytes) + ' / ' + fmtBytes(s.budgetBytes);
    f.peak.b.textContent = fmtBytes(s.peakHeldBytes);
    f.writable.b.textContent = fmtBytes(s.writableLength);
    f.producer.b.textContent = String(s.producer.emitted);
    f.paused.b.textContent = s.producer.stopped ? 'stopped' : (s.producer.paused ? 'paused' : 'running');
    f.paused.b.setAttribute('data-paused', String(s.producer.paused));
    f.read.b.textContent = fmtBytes(s.consumedBytes);
    f.events.b.textContent = s.bridgeEvents + (s.avgEventBytes ? ' · ' + s.avgEventBytes + ' B avg' : '');
    f.lost.b.textContent = s.dropped + ' / ' + s.overflowed;
    var bufferStage = s.stages.filter(function (st) { return st.name.indexOf('onBackpressure') === 0; })[0];
    this.charts.held.push([s.heldBytes, bufferStage ? bufferStage.bufferedBytes : 0], fmtBytes(s.heldBytes));
    this.charts.writable.push([s.writableLength], fmtBytes(s.writableLength));
    var tokRate = 0, readRate = 0;
    if (this.prev && s.tMs > this.prev.tMs) {
      var dt = (s.tMs - this.prev.tMs) / 1000;
      tokRate = (s.producer.emitted - this.prev.producer.emitted) / dt;
      readRate = (s.consumedBytes - this.prev.consumedBytes) / dt / (s.avgEventBytes || 180);
    }
    if (state !== 'finished') this.charts.rate.push([tokRate, readRate], Math.round(tokRate) + ' tok/s');
    this.charts.paused.push([s.producer.paused ? 1 : 0], s.producer.paused ? 'paused' : '');
    this.prev = s;
    this.ensureStages(s.stages);
    s.stages.forEach(function (st, i) {
      var r = this.stageRows[i];
      r.demand.textContent = st.outstanding === undefined ? '–' : fmtDemand(st.outstanding);
      r.buf.textContent = fmtBytes(st.bufferedBytes) + (st.maxBytes ? ' / ' + fmtBytes(st.maxBytes) : '');
      if (st.outstanding !== undefined) r.chart.push([st.outstanding === null ? 0 : st.outstanding]);
      else r.chart.push([st.bufferedBytes]);
    }, this);
    this.notes.textContent = '';
    s.notes.forEach(function (n) {
      this.notes.appendChild(el('li', { 'data-kind': n.kind }, [el('b', { text: (n.tMs / 1000).toFixed(2) + ' s' }), n.message]));
    }, this);
    updateLive();
  };

  RunPanel.prototype.appendText = function (t) {
    this.text = (this.text + t).slice(-3000);
    this.received.textContent = this.text;
    this.received.scrollTop = this.received.scrollHeight;
    this.received.setAttribute('data-received', String(this.text.length));
  };

  // ---- running ---------------------------------------------------------------------------

  function message(t) { $('#message').textContent = t || ''; }

  function stopAll() {
    Object.keys(runs).forEach(function (slot) {
      var r = runs[slot];
      if (r.es && r.done) r.es.close();
      if (r.id && !r.done) fetch(BASE + '/runs/' + r.id, { method: 'DELETE' }).catch(function () {});
    });
  }

  function start() {
    message('');
    stopAll();
    Object.keys(runs).forEach(function (slot) { var r = runs[slot]; if (r.es) r.es.close(); if (r.abort) r.abort.abort(); });
    runs = {};
    var slots = $('#compare').checked ? ['a', 'b'] : ['a'];
    var container = $('#runs');
    container.textContent = '';
    container.className = 'runs' + (slots.length === 2 ? ' two' : '');
    slots.forEach(function (slot) {
      var scenario = readScenario(slot);
      var panel = new RunPanel(slot, scenario);
      container.appendChild(panel.root);
      var run = { panel: panel, done: false };
      runs[slot] = run;
      fetch(BASE + '/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) })
        .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, body: body }; }); })
        .then(function (r) {
          if (!r.ok) { message(r.body.error ? r.body.error.message : 'could not start'); panel.status.textContent = 'refused'; return; }
          run.id = r.body.id;
          openTelemetry(run, r.body.telemetryUrl);
          readStream(run, r.body.streamUrl);
        })
        .catch(function (e) { message(String(e)); });
    });
    plannerFromScenario(readScenario('a'));
  }

  function openTelemetry(run, url) {
    var es = new EventSource(url);
    run.es = es;
    es.addEventListener('sample', function (e) { run.panel.update(JSON.parse(e.data)); });
    es.addEventListener('end', function (e) { run.done = true; run.panel.update(JSON.parse(e.data)); es.close(); });
    es.addEventListener('error', function () { if (run.done) es.close(); });
  }

  function readStream(run, url) {
    var ctrl = new AbortController();
    run.abort = ctrl;
    var decoder = new TextDecoder();
    var buf = '';
    fetch(url, { signal: ctrl.signal }).then(function (res) {
      var reader = res.body.getReader();
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) return;
          buf += decoder.decode(r.value, { stream: true });
          var i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            var block = buf.slice(0, i); buf = buf.slice(i + 2);
            var ev = 'message', data = [];
            block.split('\n').forEach(function (line) {
              if (line.indexOf('event:') === 0) ev = line.slice(6).trim();
              else if (line.indexOf('data:') === 0) data.push(line.slice(line[5] === ' ' ? 6 : 5));
            });
            if (!data.length) continue;
            if (ev === 'error') { run.panel.appendText('\n[event: error] ' + data.join('\n') + '\n'); continue; }
            try {
              var chunk = JSON.parse(data.join('\n'));
              var c = chunk.choices && chunk.choices[0] && chunk.choices[0].delta && chunk.choices[0].delta.content;
              if (c) run.panel.appendText(c);
            } catch (e) { /* not JSON: ignore */ }
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () { /* aborted or reset: telemetry tells the outcome */ });
  }

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
      var i = num(d[2], d[3], d[4], d[0] === 'k' ? 0.1 : 1);
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

  // ---- boot -------------------------------------------------------------------------------

  var scen = $('#scenarios');
  scen.appendChild(scenarioForm('a', 'Scenario A'));
  scen.appendChild(scenarioForm('b', 'Scenario B'));
  var presets = $('#presets');
  presets.appendChild(el('span', { class: 'sub', text: 'Presets: ' }));
  PRESETS.forEach(function (p) {
    var b = el('button', { type: 'button', 'data-preset': p.id, text: p.text });
    b.addEventListener('click', function () { applyPreset(p); });
    presets.appendChild(b);
  });
  applyPreset(PRESETS[1]);
  setCompare(false);
  $('#compare').addEventListener('change', function (e) { setCompare(e.target.checked); });
  $('#start').addEventListener('click', start);
  $('#stop').addEventListener('click', function () {
    Object.keys(runs).forEach(function (slot) { var r = runs[slot]; if (r.id && !r.done) fetch(BASE + '/runs/' + r.id, { method: 'DELETE' }).catch(function () {}); });
  });
  buildPlanner();
  document.body.setAttribute('data-ready', 'true');
})();
`;
