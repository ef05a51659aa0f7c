'use strict';
// `tsc` never deletes: a module moved in src/ (gateway/config.ts → gateway/config/index.ts)
// leaves its old .js in dist/, and Node's require('./config') then loads the stale file before
// the folder. The bench refuses to measure such a build.
const fs = require('node:fs');
const path = require('node:path');

/** The .js files under `dist` without a .ts/.tsx source under `src` (paths relative to dist). */
function staleDistFiles(root) {
  const dist = path.join(root, 'dist');
  const out = [];
  const walk = (dir) => {
    let entries = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        const rel = path.relative(dist, p).slice(0, -3);
        if (!['.ts', '.tsx'].some((x) => fs.existsSync(path.join(root, 'src', rel + x)))) out.push(rel + '.js');
      }
    }
  };
  walk(dist);
  return out;
}

module.exports = { staleDistFiles };
