'use strict';
// Builds another revision of tidegate for a paired before/after run (`--ref <git-rev>`): a
// detached git worktree in the temp folder, its dependencies (a link to this checkout's
// node_modules when it declares the same runtime dependencies, else `npm ci`), and `tsc`. `remove()` deletes the
// worktree; run.js calls it on every exit path.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

function git(root, args) {
  return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Whether a checkout's socket-options addon is built: true, false, or null (it has none). */
function nativeAddon(root) {
  const dir = path.join(root, 'native/socket-options');
  if (!fs.existsSync(dir)) return null;
  return fs.existsSync(path.join(dir, 'build/Release/socket_options.node'));
}

/** The commit and state of a checkout: {commit, short, subject, dirty}, or null outside git. */
function describe(root, rev = 'HEAD') {
  try {
    const commit = git(root, ['rev-parse', '--verify', `${rev}^{commit}`]);
    const subject = git(root, ['log', '-1', '--format=%s', commit]);
    const dirty = rev === 'HEAD' ? git(root, ['status', '--porcelain', '--untracked-files=no', '--', 'src', 'package.json', 'package-lock.json']) !== '' : false;
    return { commit, short: commit.slice(0, 10), subject, dirty };
  } catch {
    return null;
  }
}

/** Whether two checkouts declare the same runtime dependencies and TypeScript. */
function sameRuntime(a, b) {
  try {
    const pa = JSON.parse(fs.readFileSync(path.join(a, 'package.json'), 'utf8'));
    const pb = JSON.parse(fs.readFileSync(path.join(b, 'package.json'), 'utf8'));
    const key = (p) => JSON.stringify([p.dependencies || {}, (p.devDependencies || {}).typescript]);
    return key(pa) === key(pb);
  } catch {
    return false;
  }
}

/**
 * Checks out and builds `rev` under os.tmpdir(). Returns {rev, commit, short, subject, dir, cli,
 * install, buildS, remove()}; throws with the failing step's output (after removing the worktree).
 */
function buildRef(root, rev, log = (m) => process.stderr.write(m + '\n')) {
  const info = describe(root, rev);
  if (!info) throw new Error(`--ref ${rev}: not a commit in ${root}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-bench-ref-'));
  fs.rmdirSync(dir); // git worktree add creates it
  let added = false;
  const remove = () => {
    if (added) {
      try {
        git(root, ['worktree', 'remove', '--force', dir]);
      } catch {
        /* removed below */
      }
      added = false;
    }
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      git(root, ['worktree', 'prune']);
    } catch {
      /* nothing to prune */
    }
  };
  const t0 = Date.now();
  try {
    log(`--ref ${rev}: ${info.short} ${info.subject}: worktree at ${dir}`);
    git(root, ['worktree', 'add', '--detach', dir, info.commit]);
    added = true;
    // The build needs the runtime dependencies and the compiler: when the revision declares the
    // same ones, this checkout's node_modules serve (a link; dev tools may differ), else npm ci.
    const link = path.join(dir, 'node_modules');
    const npmCi = () => {
      fs.rmSync(link, { recursive: true, force: true });
      log(`--ref ${rev}: npm ci`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 900000 });
      return 'npm ci';
    };
    let install = sameRuntime(root, dir) && fs.existsSync(path.join(root, 'node_modules')) ? 'linked node_modules (same dependencies)' : npmCi();
    if (install !== 'npm ci') fs.symlinkSync(path.join(root, 'node_modules'), link, 'dir');
    const tsc = () => {
      const project = fs.existsSync(path.join(dir, 'tsconfig.build.json')) ? 'tsconfig.build.json' : 'tsconfig.json';
      execFileSync(process.execPath, [path.join(dir, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 600000 });
    };
    log(`--ref ${rev}: building`);
    try {
      tsc();
    } catch (e) {
      if (install === 'npm ci') throw e;
      install = npmCi(); // the linked modules did not build it
      tsc();
    }
    // Its native addon, when it has one (the script never fails; without it the gateway runs unbounded).
    const scripts = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).scripts || {};
    if (scripts['build:native']) execFileSync('npm', ['run', 'build:native'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 600000 });
    const cli = path.join(dir, 'dist/gateway/cli.js');
    if (!fs.existsSync(cli)) throw new Error(`--ref ${rev}: built, but ${path.relative(dir, cli)} is missing`);
    return { rev, ...info, dir, cli, install, nativeAddon: nativeAddon(dir), buildS: (Date.now() - t0) / 1000, remove };
  } catch (e) {
    remove();
    const out = e.stdout || e.stderr ? `${e.stdout || ''}${e.stderr || ''}`.slice(-2000) : e.message;
    throw new Error(`--ref ${rev}: build failed: ${out}`);
  }
}

module.exports = { buildRef, describe, nativeAddon };
