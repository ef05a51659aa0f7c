'use strict';
// Builds the addon with the node-gyp that npm ships (npm passes its path to scripts as
// npm_config_node_gyp). Never fails the install: without a compiler or Node's headers tidegate
// runs without the addon and logs once what it could not bound.
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const path = require('node:path');

const here = __dirname;
const gyp = process.env.npm_config_node_gyp;
if (process.env.TIDEGATE_SKIP_NATIVE === '1') process.exit(0);
if (gyp === undefined || !existsSync(gyp)) {
  console.log('tidegate: socket options addon not built (run through npm to find node-gyp); tidegate runs without it');
  process.exit(0);
}
const result = spawnSync(process.execPath, [gyp, 'rebuild'], { cwd: here, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
if (result.status === 0 && existsSync(path.join(here, 'build', 'Release', 'socket_options.node'))) process.exit(0);
const reason = (result.stderr || String(result.error || '')).split('\n').find((l) => /error/i.test(l)) || `node-gyp exited with ${result.status}`;
console.log(`tidegate: socket options addon not built (${reason.trim().slice(0, 160)}); tidegate runs without it`);
