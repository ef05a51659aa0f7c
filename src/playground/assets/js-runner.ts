/** Starting, stopping and watching runs: one connection per page. Part of the page script (see `js.ts`): plain ES2020 inside its closure. */
export const PAGE_RUNNER = String.raw`
  // ---- running ---------------------------------------------------------------------------

  // A browser allows six connections per host. The page holds one long-lived connection, the
  // watch stream (every run's telemetry and received text, multiplexed by run id), so compare
  // mode also works in a second and a third tab.
  var watch = null;

  function message(t) { $('#message').textContent = t || ''; }

  /** Stops the runs still going; resolves once the server answered. */
  function stopAll() {
    var ids = Object.keys(runs).map(function (slot) { return runs[slot]; })
      .filter(function (r) { return r.id && !r.done; }).map(function (r) { return r.id; });
    return Promise.all(ids.map(function (id) {
      return fetch(BASE + '/runs/' + id, { method: 'DELETE' }).catch(function () {});
    }));
  }

  function post(scenario) {
    return fetch(BASE + '/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) })
      .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, body: body }; }); });
  }

  function start() {
    message('');
    var slots = $('#compare').checked ? ['a', 'b'] : ['a'];
    var problems = [];
    slots.forEach(function (slot) { problems = problems.concat(checkScenario(slot)); });
    if (problems.length) { message(problems.join('; ')); return; }
    stopAll().then(function () {
      if (watch) watch.abort();
      watch = null;
      runs = {};
      var container = $('#runs');
      container.textContent = '';
      container.className = 'runs' + (slots.length === 2 ? ' two' : '');
      var scenarios = slots.map(readScenario);
      slots.forEach(function (slot, i) {
        var panel = new RunPanel(slot, scenarios[i]);
        container.appendChild(panel.root);
        runs[slot] = { panel: panel, done: false, sse: sseText() };
      });
      plannerFromScenario(scenarios[0]);
      return Promise.all(scenarios.map(post)).then(function (answers) {
        var refused = [];
        answers.forEach(function (r, i) {
          var run = runs[slots[i]];
          if (r.ok) { run.id = r.body.id; return; }
          run.done = true;
          run.panel.status.textContent = 'refused';
          var e = r.body.error || {};
          refused.push(e.issues ? describeIssues(slots[i], e.issues) : (e.message || 'could not start'));
        });
        if (refused.length) {
          message(refused.join('; '));
          stopAll();
          return;
        }
        openWatch();
      });
    }).catch(function (e) { message(String(e)); });
  }

  /** Reads the page's one stream: event: sample | end (telemetry), text | closed (received data). */
  function openWatch() {
    var byId = {};
    Object.keys(runs).forEach(function (slot) { byId[runs[slot].id] = runs[slot]; });
    var ctrl = new AbortController();
    watch = ctrl;
    var frames = sseText();
    fetch(BASE + '/watch?' + Object.keys(byId).map(function (id) { return 'run=' + encodeURIComponent(id); }).join('&'), { signal: ctrl.signal })
      .then(function (res) {
        if (!res.ok) return res.json().then(function (b) { message(b.error ? b.error.message : 'could not watch the runs'); });
        var reader = res.body.getReader();
        var decoder = new TextDecoder();
        function pump() {
          return reader.read().then(function (r) {
            if (r.done) return;
            frames.feed(decoder.decode(r.value, { stream: true }), function (ev, data) {
              var d = JSON.parse(data);
              var run = byId[d.id];
              if (!run) return;
              if (ev === 'sample') run.panel.update(d);
              else if (ev === 'end') { run.done = true; run.panel.update(d); }
              else if (ev === 'text') run.sse.feed(d.text, function (e2, data2) { received(run, e2, data2); });
              else if (ev === 'closed' && d.reset) run.panel.appendText('\n[connection reset]\n');
            });
            return pump();
          });
        }
        return pump();
      })
      .catch(function (e) { if (!ctrl.signal.aborted) message('lost the connection to the playground: ' + String(e)); });
  }

  /** One run's data is OpenAI chunks: show their text, and an error event as it came. */
  function received(run, ev, data) {
    if (ev === 'error') { run.panel.appendText('\n[event: error] ' + data + '\n'); return; }
    try {
      var chunk = JSON.parse(data);
      var c = chunk.choices && chunk.choices[0] && chunk.choices[0].delta && chunk.choices[0].delta.content;
      if (c) run.panel.appendText(c);
    } catch (e) { /* not JSON: ignore */ }
  }

  /** A small reader of SSE text (LF line ends, as both streams are written): feed(text, onEvent(type, data)). */
  function sseText() {
    var buf = '';
    return {
      feed: function (text, onEvent) {
        buf += text;
        var i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          var block = buf.slice(0, i); buf = buf.slice(i + 2);
          var ev = 'message', data = [];
          block.split('\n').forEach(function (line) {
            if (line.indexOf('event:') === 0) ev = line.slice(6).trim();
            else if (line.indexOf('data:') === 0) data.push(line.slice(line[5] === ' ' ? 6 : 5));
          });
          if (data.length) onEvent(ev, data.join('\n'));
        }
      },
    };
  }
`;
