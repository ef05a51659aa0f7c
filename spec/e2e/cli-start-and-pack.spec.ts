/** The CLI's one-line start errors, and packing from a fresh clone (prepare builds dist/). */
// Needs dist/ (npm run build) for the CLI specs.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.join(__dirname, '../..');

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [path.join(ROOT, 'dist/gateway/cli.js'), ...args], { cwd: ROOT, timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: child.exitCode ?? (err as { code?: number } | null)?.code ?? null, stdout, stderr }),
    );
  });
}

describe('the tidegate bin after npm run build', () => {
  it('is executable, so a folder install that runs prepare again still starts it', () => {
    // A folder install links the clone; its prepare rebuilds dist/ after npm set the bin's mode.
    expect(statSync(path.join(ROOT, 'dist/gateway/cli.js')).mode & 0o111).toBe(0o111);
  });
});

describe('tidegate CLI start errors', () => {
  let busy: net.Server;
  afterEach(async () => {
    await new Promise<void>((r) => (busy ? busy.close(() => r()) : r()));
  });

  it.each([
    ['IPv4', '127.0.0.1', '127.0.0.1'],
    ['IPv6', '::1', '[::1]'],
  ])('--port <busy> on %s prints one line and exits 1', async (_n, host, shown) => {
    busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, host, r));
    const port = (busy.address() as AddressInfo).port;
    const { code, stdout, stderr } = await runCli(['--host', host, '--port', String(port)]);
    expect(code).toBe(1);
    // stdout carries the JSON log (the embedded simulator started); the reason is one line on stderr.
    expect(stdout).not.toMatch(/EADDRINUSE|at Server/);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`cannot listen on ${shown}:${port}:`);
    expect(lines[0]).toContain('address already in use');
  });
});

describe('npm pack from a fresh clone', () => {
  let dir: string | undefined;
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('produces a tarball with dist/ (prepare builds it), without specs or sources', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tidegate-pack-'));
    const clone = path.join(dir, 'clone');
    execFileSync('git', ['clone', '-q', ROOT, clone], { timeout: 60_000 });
    // Installed dependencies, as after `npm ci` (no network here).
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], { cwd: clone, timeout: 120_000, encoding: 'utf8' });
    const files = (JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: Array<{ path: string }> }>)[0].files.map((f) => f.path);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/gateway/cli.js');
    expect(files.filter((f) => f.startsWith('spec/') || f.startsWith('src/'))).toEqual([]);
  }, 180_000);
});
