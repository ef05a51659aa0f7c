'use strict';
// Replaces scenarios of one results file with those of later partial runs and rewrites the docs:
//   node bench/merge.js base.json S1=s1run.json MAP=maprun.json -- "note" ...
// (keys as in results.scenarios: S1, S2, S2chunk, S3, S3burst, S4, SETUP, MAP, MICRO, RESUME)
// Used when part of a full run had to be repeated; the notes say which part and why.
const fs = require('node:fs');
const path = require('node:path');
const report = require('./report');

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const files = sep >= 0 ? argv.slice(0, sep) : argv;
const notes = sep >= 0 ? argv.slice(sep + 1) : [];
const base = JSON.parse(fs.readFileSync(files[0], 'utf8'));
for (const spec of files.slice(1)) {
  const [key, file] = spec.split('=');
  const other = JSON.parse(fs.readFileSync(file, 'utf8'));
  base.scenarios[key] = other.scenarios[key];
  base.params[key.toLowerCase()] = other.params[key.toLowerCase()];
  // The page names the run each scenario's figures came from.
  base.scenarioRuns = { ...(base.scenarioRuns || {}), [key]: { startedAt: other.startedAt, build: other.build, mode: other.mode, command: other.command, durationS: other.durationS } };
}
base.notes = [...(base.notes || []), ...notes];
const root = path.resolve(__dirname, '..');
fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
fs.writeFileSync(path.join(__dirname, 'results', 'latest-full-merged.json'), JSON.stringify(base, null, 1));
console.log(report.write(base, root).join(', '));
