import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/*
 * native/socket-options/build.js (the install script and `npm run build:native`) in a copy of the
 * addon's directory, as a linked install runs it in a checkout that already has a build, with a
 * stand-in for npm's node-gyp whose `rebuild` cleans its build/ first, as node-gyp's does.
 */

const root = path.resolve(__dirname, '../..');
const source = path.join(root, 'native/socket-options');
const realAddon = path.join(source, 'build/Release/socket_options.node');
const run = fs.existsSync(realAddon) ? describe : describe.skip;

/** A node-gyp stand-in: cleans build/, writes `marker`, then fails or installs `addon`. */
function fakeGyp(dir: string, outcome: { fail: true } | { addon: string }): string {
  const file = path.join(dir, 'fake-node-gyp.js');
  const finish =
    'fail' in outcome
      ? `process.stderr.write('gyp ERR! build error\\n'); process.exit(1);`
      : `fs.mkdirSync('build/Release', { recursive: true }); fs.copyFileSync(${JSON.stringify(outcome.addon)}, 'build/Release/socket_options.node');`;
  fs.writeFileSync(
    file,
    `const fs = require('node:fs');
fs.rmSync('build', { recursive: true, force: true });
fs.writeFileSync(${JSON.stringify(path.join(dir, 'gyp-ran'))}, process.cwd());
${finish}
`,
  );
  return file;
}

run('native/socket-options/build.js', () => {
  let dir: string;
  let pkg: string;
  let addon: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-native-build-'));
    pkg = path.join(dir, 'socket-options');
    fs.mkdirSync(path.join(pkg, 'build/Release'), { recursive: true });
    for (const file of ['build.js', 'binding.gyp', 'socket_options.c', 'index.js', 'package.json']) fs.copyFileSync(path.join(source, file), path.join(pkg, file));
    addon = path.join(pkg, 'build/Release/socket_options.node');
    fs.copyFileSync(realAddon, addon);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function build(gyp: string): string {
    const result = spawnSync(process.execPath, [path.join(pkg, 'build.js')], { cwd: pkg, encoding: 'utf8', env: { ...process.env, npm_config_node_gyp: gyp, TIDEGATE_SKIP_NATIVE: '' } });
    expect(result.status).toBe(0);
    return result.stdout;
  }

  /** Makes the sources newer than the addon in place, so that a build is due. */
  function touchSources(): void {
    const later = new Date(fs.statSync(addon).mtimeMs + 10_000);
    fs.utimesSync(path.join(pkg, 'socket_options.c'), later, later);
  }

  it('keeps a working addon in place when it loads and is newer than its sources, without running node-gyp', () => {
    const before = fs.readFileSync(addon);
    build(fakeGyp(dir, { fail: true }));
    expect(fs.existsSync(path.join(dir, 'gyp-ran'))).toBe(false);
    expect(fs.readFileSync(addon).equals(before)).toBe(true);
  });

  it('keeps the addon in place when a due build fails, node-gyp cleaning only a scratch copy', () => {
    touchSources();
    const before = fs.readFileSync(addon);
    const out = build(fakeGyp(dir, { fail: true }));
    expect(out).toMatch(/not built \(gyp ERR! build error\); the build in place is kept/);
    expect(fs.readFileSync(path.join(dir, 'gyp-ran'), 'utf8')).not.toBe(pkg);
    expect(fs.readFileSync(addon).equals(before)).toBe(true);
    expect(fs.existsSync(path.join(pkg, 'build/Release'))).toBe(true);
  });

  it('replaces an addon that does not load with the one node-gyp built', () => {
    fs.writeFileSync(addon, 'not an addon');
    build(fakeGyp(dir, { addon: realAddon }));
    expect(fs.readFileSync(addon).equals(fs.readFileSync(realAddon))).toBe(true);
    expect(fs.readdirSync(path.dirname(addon))).toEqual(['socket_options.node']);
  });

  it('removes its scratch copy, whether node-gyp failed or built', () => {
    touchSources();
    build(fakeGyp(dir, { fail: true }));
    expect(fs.existsSync(fs.readFileSync(path.join(dir, 'gyp-ran'), 'utf8'))).toBe(false);
    fs.writeFileSync(addon, 'not an addon');
    build(fakeGyp(dir, { addon: realAddon }));
    expect(fs.existsSync(fs.readFileSync(path.join(dir, 'gyp-ran'), 'utf8'))).toBe(false);
  });
});
