/** The playground page's stylesheet. */
export const PLAYGROUND_CSS = String.raw`
:root { --fg:#1d2433; --muted:#5c667a; --line:#d9dee8; --bg:#f6f7fa; --card:#fff; --accent:#1f6feb; --warn:#d4500f;
  --ok:#1a7f37; --bad:#c62828; --buf:#8250df; --font: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.4 var(--font); color:var(--fg); background:var(--bg); }
header { padding: 14px 22px 6px; }
header h1 { margin:0 0 4px; font-size:20px; }
header h1 span { color: var(--muted); font-weight: 500; }
header p { margin:0; color:var(--muted); max-width: 1100px; }
main { padding: 8px 22px 12px; }
footer { padding: 4px 22px 18px; color: var(--muted); font-size: 12px; max-width: 1200px; }
code { font-size: 12px; background:#eef1f6; padding:1px 4px; border-radius:3px; }
.presets { display:flex; flex-wrap:wrap; gap:6px; margin: 6px 0 8px; }
.presets button { font-size:12px; }
button { font: inherit; padding: 5px 12px; border:1px solid var(--line); border-radius:6px; background:var(--card); cursor:pointer; }
button.primary { background: var(--accent); color:#fff; border-color: var(--accent); font-weight:600; }
.scenarios { display:grid; grid-template-columns: repeat(2, minmax(0,1fr)); gap: 10px; }
fieldset { min-width: 0; }
fieldset { border:1px solid var(--line); border-radius:8px; background:var(--card); margin:0; padding:6px 10px 8px; }
fieldset[hidden] { display:none; }
legend { font-weight:600; padding: 0 4px; }
.row { display:flex; flex-wrap:wrap; gap: 4px 14px; align-items:center; margin: 3px 0; }
.row label { display:flex; gap:5px; align-items:center; color: var(--muted); max-width: 100%; min-width: 0; }
.row label select { min-width: 0; }
input[type=number] { width: 84px; font: inherit; padding: 2px 4px; }
input[aria-invalid=true] { border: 1px solid var(--bad); background: #fff5f5; outline-color: var(--bad); }
input:disabled, select:disabled { opacity: .45; }
label:has(> :disabled) { opacity: .6; }
input[type=text] { width: 200px; max-width: 100%; font: inherit; padding: 2px 4px; }
select { font: inherit; padding: 2px; max-width: 100%; }
.actions { display:flex; flex-wrap: wrap; gap: 8px 12px; align-items:center; margin: 8px 0 4px; }
#message { color: var(--bad); overflow-wrap: anywhere; flex-basis: 100%; }
#message:empty { display: none; }
.runs { display:grid; grid-template-columns: 1fr; gap: 10px; margin-top: 6px; }
.runs.two { grid-template-columns: repeat(2, minmax(0,1fr)); }
.run { background: var(--card); border:1px solid var(--line); border-radius:8px; padding: 8px 12px 10px; min-width: 0; }
.run h2 { margin:0; font-size:15px; display:flex; flex-wrap: wrap; gap:4px 8px; align-items:center; overflow-wrap: anywhere; }
.run .desc { color: var(--muted); font-size:12px; margin: 2px 0 6px; overflow-wrap: anywhere; }
.status { font-size:12px; font-weight:600; padding: 1px 8px; border-radius: 10px; background:#eef1f6; color:var(--muted); }
.status[data-state=running] { background:#ddf4ff; color:var(--accent); }
.status[data-outcome=completed] { background:#dafbe1; color:var(--ok); }
.status[data-outcome=overflow], .status[data-outcome=stalled], .status[data-outcome=error], .status[data-outcome=demo-cap], .status[data-outcome=aborted] { background:#ffebe9; color:var(--bad); }
.figures { display:grid; grid-template-columns: repeat(4, minmax(0,1fr)); gap: 4px 10px; font-size: 12px; margin-bottom: 6px; }
.figures div { min-width: 0; overflow-wrap: anywhere; }
.figures div b { display:block; font-size: 15px; font-variant-numeric: tabular-nums; }
.figures div span { color: var(--muted); }
.charts { display:grid; grid-template-columns: repeat(2, minmax(0,1fr)); gap: 6px 12px; }
.chart { min-width:0; }
.chart .title { font-size:12px; color: var(--muted); display:flex; justify-content:space-between; gap: 6px; }
.chart svg { width:100%; height:64px; display:block; background:#fbfcfe; border:1px solid #eef1f6; border-radius:4px; }
.chart.small svg { height: 34px; }
.stages { width:100%; border-collapse: collapse; font-size:12px; margin: 6px 0; }
.stages th, .stages td { text-align:left; padding: 2px 6px; border-bottom: 1px solid #eef1f6; vertical-align: middle; }
.stages td:first-child { overflow-wrap: anywhere; }
.stages td.num { text-align:right; font-variant-numeric: tabular-nums; }
.stages th:nth-child(4) { width: 26%; }
.stages td.spark svg { width:100%; height:22px; display:block; }
.lower { display:grid; grid-template-columns: repeat(2, minmax(0,1fr)); gap: 10px; margin-top: 6px; }
.lower > div { min-width: 0; }
.received { height: 92px; overflow:auto; white-space: pre-wrap; overflow-wrap: anywhere; font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; background:#fbfcfe; border:1px solid #eef1f6; border-radius:4px; padding:4px 6px; margin:0; }
.notes { list-style:none; margin:0; padding:0; height: 92px; overflow-y:auto; overflow-x:hidden; overflow-wrap: anywhere; font-size:12px; }
.notes li { padding: 1px 0; border-bottom: 1px dotted #eef1f6; }
.notes li b { font-variant-numeric: tabular-nums; color: var(--muted); font-weight: 500; margin-right: 4px; }
.notes li[data-kind=overflow], .notes li[data-kind=cap], .notes li[data-kind=limit] { color: var(--bad); }
.notes li[data-kind=outcome] { font-weight: 600; }
.sub { font-size:12px; color: var(--muted); margin: 4px 0 2px; }
.planner { background: var(--card); border:1px solid var(--line); border-radius:8px; padding: 8px 12px 10px; margin-top: 10px; }
.planner h2 { margin:0 0 4px; font-size:15px; }
.planner .formula { font-size: 13px; margin: 4px 0; }
.planner .out { display:grid; grid-template-columns: repeat(4, minmax(0,1fr)); gap: 4px 10px; margin-top: 4px; }
.planner .out div { min-width: 0; overflow-wrap: anywhere; }
.planner .live { border-collapse: collapse; }
.planner .out b { display:block; font-size:15px; font-variant-numeric: tabular-nums; }
.planner .live { margin-top: 6px; font-size: 13px; }
.planner .live td, .planner .live th { padding: 2px 10px 2px 0; text-align:left; vertical-align: top; }
/* Below 900 px two columns no longer fit: everything stacks; below 560 px the figures and charts halve. */
@media (max-width: 900px) {
  .scenarios, .runs.two { grid-template-columns: minmax(0,1fr); }
}
@media (max-width: 560px) {
  header, main, footer { padding-left: 10px; padding-right: 10px; }
  .figures, .planner .out { grid-template-columns: repeat(2, minmax(0,1fr)); }
  .charts, .lower { grid-template-columns: minmax(0,1fr); }
  .run, .planner { padding: 8px; }
  .planner .live, .stages { font-size: 11px; }
  .planner .live td, .planner .live th { padding-right: 5px; }
  .stages th, .stages td { padding: 2px 3px; }
  .stages th:nth-child(4) { width: 18%; }
}
.legend i { display:inline-block; width:10px; height:3px; vertical-align:middle; margin: 0 3px 0 8px; }
`;
