'use strict';
// Builds the addon with the node-gyp that npm ships (npm passes its path to scripts as
// npm_config_node_gyp). Never fails the install: without a compiler or Node's headers tidegate
// runs without the addon and logs once what it could not bound.
//
// Never deletes a working build it did not make: a linked install (`npm link`, `npm install
// ../tidegate`, a `file:` dependency) runs this in the checkout itself, whose build/ is the
// developer's. An addon that loads and is newer than its sources is kept as it is; otherwise
// node-gyp runs in a scratch copy of the sources (its `rebuild` starts with a clean), and only a
// build that succeeded replaces build/Release/socket_options.node.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const here = __dirname;
const SOURCES = ['binding.gyp', 'socket_options.c'];
const addon = path.join(here, 'build', 'Release', 'socket_options.node');
const gyp = process.env.npm_config_node_gyp;
if (process.env.TIDEGATE_SKIP_NATIVE === '1') process.exit(0);
if (upToDate()) process.exit(0);
if (gyp === undefined || !fs.existsSync(gyp)) {
  console.log('tidegate: socket options addon not built (run through npm to find node-gyp); tidegate runs without it');
  process.exit(0);
}
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-socket-options-'));
try {
  for (const file of SOURCES) fs.copyFileSync(path.join(here, file), path.join(scratch, file));
  const result = spawnSync(process.execPath, [gyp, 'rebuild'], { cwd: scratch, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const built = path.join(scratch, 'build', 'Release', 'socket_options.node');
  if (result.status === 0 && fs.existsSync(built)) install(built);
  else {
    const reason = (result.stderr || String(result.error || '')).split('\n').find((l) => /error/i.test(l)) || `node-gyp exited with ${result.status}`;
    const kept = fs.existsSync(addon) ? '; the build in place is kept' : '; tidegate runs without it';
    console.log(`tidegate: socket options addon not built (${reason.trim().slice(0, 160)})${kept}`);
  }
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}

/** True when the addon in place loads in this Node and is newer than every source. */
function upToDate() {
  let builtMs;
  try {
    builtMs = fs.statSync(addon).mtimeMs;
  } catch {
    return false;
  }
  if (SOURCES.some((file) => fs.statSync(path.join(here, file)).mtimeMs > builtMs)) return false;
  return spawnSync(process.execPath, ['-e', 'require(process.argv[1])', addon], { stdio: 'ignore' }).status === 0;
}

/** Puts a fresh addon in place with a rename, so a reader never sees half a file. */
function install(built) {
  fs.mkdirSync(path.dirname(addon), { recursive: true });
  const next = `${addon}.${process.pid}.tmp`;
  fs.copyFileSync(built, next);
  fs.renameSync(next, addon);
}
