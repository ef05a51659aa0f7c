/**
 * The playground page. `__BASE__` is replaced with the router's mount path (HTML-escaped).
 * Everything it loads is served by the router itself: no CDN.
 */
export const PLAYGROUND_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tidegate · backpressure playground</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="__BASE__/assets/app.css">
</head>
<body data-base="__BASE__">
<header>
  <h1>tidegate <span>backpressure playground</span></h1>
  <p>A simulated model streams OpenAI-style chunks through real tidegate operators and the Express demand bridge to a
  client that reads at the speed you set. Watch demand travel up the chain, bytes pile up in the buffers, and the
  budget decide what happens when the client cannot keep up. Concepts: <code>docs/concepts.md</code>; operators and
  their Reactor names: <code>docs/operators.md</code>.</p>
</header>
<main>
  <section id="controls" aria-label="Scenario">
    <div class="presets" id="presets"></div>
    <div class="scenarios" id="scenarios"></div>
    <div class="actions">
      <label class="compare"><input type="checkbox" id="compare"> Compare mode: run scenario B beside A, at once</label>
      <button type="button" id="start" class="primary">Start</button>
      <button type="button" id="stop">Stop</button>
      <span id="message" role="status"></span>
    </div>
  </section>
  <section id="runs" class="runs" aria-label="Live runs"></section>
  <section id="planner" class="planner" aria-label="Capacity planner"></section>
</main>
<footer>The client's reading speed is enforced on the server by an emulated client (a paced Writable in front of the
response, 16 KiB high-water mark like a socket): browsers keep accepting a fetch body whose reader is idle, so a reader
that stops in the page would not back anything up. Limits: 60 s per run, a few runs at once, the unbounded buffer is
stopped at its demo cap.</footer>
<script src="__BASE__/assets/app.js"></script>
</body>
</html>
`;
