#!/usr/bin/env node
// `npm run build` (also `prepare`): compiles src/ into a fresh directory beside dist/ and swaps it
// in only once tsc succeeded. An app linked to this clone (`npm install /path/to/tidegate` reruns
// `prepare` on each install in the app) or a gateway started from it keeps a whole dist/ meanwhile.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
// Siblings of dist/, so the source maps' relative paths to src/ are the same.
const fresh = path.join(root, `dist.build-${process.pid}`);
const old = path.join(root, `dist.old-${process.pid}`);

try {
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--outDir', fresh], {
    stdio: 'inherit',
  });
  fs.chmodSync(path.join(fresh, 'gateway', 'cli.js'), 0o755);
} catch (err) {
  fs.rmSync(fresh, { recursive: true, force: true });
  process.stderr.write(`build failed; dist/ left as it was\n`);
  process.exit(typeof err.status === 'number' && err.status !== 0 ? err.status : 1);
}
if (fs.existsSync(dist)) fs.renameSync(dist, old);
fs.renameSync(fresh, dist);
fs.rmSync(old, { recursive: true, force: true });
