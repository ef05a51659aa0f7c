import { PAGE_FORMS } from './js-forms';
import { PAGE_PANELS } from './js-panels';
import { PAGE_PLANNER } from './js-planner';
import { PAGE_RUNNER } from './js-runner';

/** Shared helpers of the page script: element builder, selectors, number formats. */
const PAGE_HELPERS = String.raw`
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

`;

/** Builds the forms and the planner, wires the buttons, then marks the page ready. */
const PAGE_BOOT = String.raw`
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
  $('#stop').addEventListener('click', function () { stopAll(); });
  buildPlanner();
  document.body.setAttribute('data-ready', 'true');
`;


/**
 * The playground page's script: plain ES2020, no modules, no dependencies, one closure. It posts
 * scenarios and reads every run's telemetry and received text from one multiplexed SSE
 * connection (`GET /watch`), and draws small inline SVG charts. Rendered numbers are mirrored in
 * `data-*` attributes (`data-peak`, `data-budget`, `data-outcome`) so tests read what the page drew.
 */
export const PLAYGROUND_JS = `(function () {${PAGE_HELPERS}${PAGE_FORMS}${PAGE_PANELS}${PAGE_RUNNER}${PAGE_PLANNER}${PAGE_BOOT}})();
`;
