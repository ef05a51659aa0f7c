/** The scenario forms, their presets and their checks. Part of the page script (see `js.ts`): plain ES2020 inside its closure. */
export const PAGE_FORMS = String.raw`
  // ---- scenario forms -------------------------------------------------------------------

  // Each number input: its label, the unit the user types in, its bounds (the server's
  // PLAYGROUND_LIMITS, in that unit), the scenario field it fills and that field's unit scale.
  var NUMBERS = {
    duration: { label: 'Run', unit: 's', min: 1, max: 60, field: 'durationSec', scale: 1 },
    producer: { label: 'Producer', unit: 'tokens/s', min: 1, max: 5000, field: 'producerTokensPerSec', scale: 1 },
    consumer: { label: 'Client reads', unit: 'B/s', min: 0, max: 10485760, field: 'consumerBytesPerSec', scale: 1 },
    high: { label: 'highTide', unit: 'events', min: 1, max: 4096, field: 'limitRate.highTide', scale: 1 },
    low: { label: 'lowTide', unit: 'events', min: 0, max: 4096, field: 'limitRate.lowTide', scale: 1 },
    budget: { label: 'Stream budget', unit: 'KiB', min: 32, max: 4096, field: 'budgetBytes', scale: 1024 },
  };

  function field(slot, name, label, input) {
    input.id = slot + '-' + name;
    input.name = name;
    return el('label', { for: input.id }, [label, input]);
  }
  function num(slot, name, value) {
    var d = NUMBERS[name];
    var i = el('input', { type: 'number', value: value, min: d.min, max: d.max, step: 1, required: true, inputmode: 'numeric' });
    return field(slot, name, d.label + ' (' + d.unit + ')', i);
  }
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
      num(slot, 'duration', 20),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      num(slot, 'producer', 300),
      num(slot, 'consumer', 4096),
      field(slot, 'stalled', 'stalled', check(false)),
    ]));
    f.appendChild(el('div', { class: 'row' }, [
      field(slot, 'lr', 'limitRate', check(false)),
      num(slot, 'high', 32),
      num(slot, 'low', 24),
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
      field(slot, 'bounded', 'buffer within the budget (unchecked: unbounded, demo cap 8 MiB)', check(true)),
      field(slot, 'overflow', 'overflow', select([
        ['terminate', "'terminate'"], ['error', "'error' (Reactor default)"], ['drop-latest', "'drop-latest'"], ['drop-oldest', "'drop-oldest'"],
      ], 'terminate')),
    ]));
    f.appendChild(el('div', { class: 'row' }, [num(slot, 'budget', 64)]));
    f.addEventListener('input', function () { applicable(slot); });
    f.addEventListener('change', function () { applicable(slot); });
    return f;
  }

  function input(slot, name) { return document.getElementById(slot + '-' + name); }

  // A control that does nothing in this scenario is disabled, not silently ignored: the
  // client's rate while it is stalled, the tides without limitRate, the buffer's settings
  // without onBackpressureBuffer, overflow for an unbounded buffer (it never overflows).
  function applicable(slot) {
    var buffer = input(slot, 'strategy').value === 'buffer';
    input(slot, 'consumer').disabled = input(slot, 'stalled').checked;
    input(slot, 'high').disabled = input(slot, 'low').disabled = !input(slot, 'lr').checked;
    input(slot, 'bounded').disabled = !buffer;
    input(slot, 'overflow').disabled = !buffer || !input(slot, 'bounded').checked;
  }

  function value(slot, name) { return Number(input(slot, name).value) * NUMBERS[name].scale; }
  function readScenario(slot) {
    var stalled = input(slot, 'stalled').checked;
    return {
      label: input(slot, 'label').value || ('Scenario ' + slot.toUpperCase()),
      producerTokensPerSec: value(slot, 'producer'),
      consumerBytesPerSec: stalled ? 0 : value(slot, 'consumer'),
      limitRate: input(slot, 'lr').checked ? { highTide: value(slot, 'high'), lowTide: value(slot, 'low') } : null,
      strategy: input(slot, 'strategy').value,
      buffer: { bounded: input(slot, 'bounded').checked, overflow: input(slot, 'overflow').value },
      budgetBytes: value(slot, 'budget'),
      durationSec: value(slot, 'duration'),
    };
  }

  /** What is wrong with one number input, in its label and the unit the user typed in; '' when fine. */
  function problem(slot, name) {
    var i = input(slot, name), d = NUMBERS[name];
    if (i.disabled) return '';
    var what = 'Scenario ' + slot.toUpperCase() + ' · ' + d.label + ': ';
    var typed = i.value.trim();
    if (typed === '' || !isFinite(Number(typed))) return what + 'enter a number of ' + d.unit;
    var n = Number(typed);
    if (Math.floor(n) !== n) return what + 'enter a whole number of ' + d.unit + ' (you typed ' + typed + ')';
    if (n < d.min || n > d.max) return what + 'between ' + d.min + ' and ' + d.max + ' ' + d.unit + ' (you typed ' + typed + ' ' + d.unit + ')';
    return '';
  }
  /** Marks each invalid input and returns their messages (empty when the scenario can be posted). */
  function checkScenario(slot) {
    var out = [];
    Object.keys(NUMBERS).forEach(function (name) {
      var p = problem(slot, name);
      input(slot, name).setAttribute('aria-invalid', p ? 'true' : 'false');
      if (p) out.push(p);
    });
    return out;
  }
  /** A server refusal (error.issues) in the page's words: the field's label and unit. */
  function describeIssues(slot, issues) {
    return issues.map(function (issue) {
      var name = Object.keys(NUMBERS).filter(function (k) { return NUMBERS[k].field === issue.field; })[0];
      var prefix = 'Scenario ' + slot.toUpperCase() + ' · ';
      if (!name) return prefix + issue.field + ': ' + issue.message;
      var d = NUMBERS[name];
      input(slot, name).setAttribute('aria-invalid', 'true');
      var bound = issue.minimum !== undefined ? 'at least ' + issue.minimum / d.scale : issue.maximum !== undefined ? 'at most ' + issue.maximum / d.scale : '';
      return prefix + d.label + ': ' + (bound ? bound + ' ' + d.unit : 'not accepted') + ' (you typed ' + input(slot, name).value + ' ' + d.unit + ')';
    }).join('; ');
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
    applicable(slot);
  }

  var PRESETS = [
    { id: 'stalled-terminate', text: 'Stalled client + terminate', a: { label: 'stalled client, byte budget + terminate', producer: 300, consumer: 0, strategy: 'buffer', overflow: 'terminate' } },
    { id: 'unbounded-vs-budget', text: 'Unbounded buffer vs budget + terminate', compare: true,
      a: { label: 'unbounded buffer', producer: 3000, consumer: 4096, strategy: 'buffer', bounded: false, duration: 30 },
      b: { label: 'byte budget + terminate', producer: 3000, consumer: 4096, strategy: 'buffer', overflow: 'terminate', duration: 30 } },
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
`;
