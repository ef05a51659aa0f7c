/** The inline SVG charts and the live run panels. Part of the page script (see `js.ts`): plain ES2020 inside its closure. */
export const PAGE_PANELS = String.raw`
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

`;
