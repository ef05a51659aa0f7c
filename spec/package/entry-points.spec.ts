import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

/*
 * The package as a user installs it: `npm pack` of the built project, extracted into a temporary
 * project's node_modules/tidegate, its dependencies linked from this checkout's node_modules
 * (no registry). Each check runs in a fresh `node` or a TypeScript program rooted in that project.
 */

const root = path.resolve(__dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};

/** What `require('tidegate')` must never load: the gateway wing's libraries and the simulator's data. */
const GATEWAY_ONLY = [
  { name: 'winston', pattern: /[\\/]node_modules[\\/]winston[\\/]/ },
  { name: 'prom-client', pattern: /[\\/]node_modules[\\/]prom-client[\\/]/ },
  { name: 'zod', pattern: /[\\/]node_modules[\\/]zod[\\/]/ },
  { name: 'yaml', pattern: /[\\/]node_modules[\\/]yaml[\\/]/ },
  { name: 'transcripts', pattern: /[\\/]tidegate[\\/]dist[\\/]simulator[\\/]transcripts[\\/]/ },
  { name: 'simulator', pattern: /[\\/]tidegate[\\/]dist[\\/]simulator[\\/]/ },
  { name: 'playground', pattern: /[\\/]tidegate[\\/]dist[\\/]playground[\\/]/ },
  { name: 'gateway', pattern: /[\\/]tidegate[\\/]dist[\\/]gateway[\\/]/ },
];

/** Loads `entry` in a fresh node inside the temporary project; returns every module file loaded. */
const LOAD_SCRIPT = `
const Module = require('module');
const requested = [];
const load = Module._load;
Module._load = function (request, parent, isMain) {
  requested.push(request);
  return load.apply(this, arguments);
};
const lib = require(process.argv[1]);
process.stdout.write(JSON.stringify({
  files: Object.keys(require.cache),
  requested,
  exports: Object.keys(lib).sort(),
}));
`;

interface Loaded {
  files: string[];
  requested: string[];
  exports: string[];
}

let project: string;

function loadInProject(entry: string): Loaded {
  const out = spawnSync(process.execPath, ['-e', LOAD_SCRIPT, entry], { cwd: project, encoding: 'utf8', timeout: 15_000 });
  if (out.status !== 0) throw new Error(`node -e require('${entry}') exited ${String(out.status)}: ${out.stderr}`);
  return JSON.parse(out.stdout) as Loaded;
}

/** Type-checks the given user files together in the temporary project; returns each file's diagnostics. */
function typecheck(sources: Record<string, string>, moduleResolution: ts.ModuleResolutionKind, module: ts.ModuleKind, skipLibCheck = true): Record<string, string[]> {
  const files = Object.keys(sources).map((name) => {
    const file = path.join(project, `${name}-${moduleResolution}.ts`);
    fs.writeFileSync(file, sources[name] ?? '');
    return { name, file };
  });
  const program = ts.createProgram(files.map((f) => f.file), {
    strict: true,
    noEmit: true,
    skipLibCheck,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    module,
    moduleResolution,
    types: ['node'],
    typeRoots: [path.join(project, 'node_modules', '@types')],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const global = diagnostics.filter((d) => d.file === undefined).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (global.length > 0) throw new Error(`compiler options rejected: ${global.join('; ')}`);
  return Object.fromEntries(
    files.map(({ name, file }) => [
      name,
      diagnostics.filter((d) => d.file?.fileName === file).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    ]),
  );
}

beforeAll(() => {
  if (!fs.existsSync(path.join(root, 'dist', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-pack-'));
  const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', project], {
    cwd: root,
    encoding: 'utf8',
    timeout: 20_000,
  });
  const [{ filename }] = JSON.parse(packed) as [{ filename: string }];
  const installed = path.join(project, 'node_modules', 'tidegate');
  fs.mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', path.join(project, filename), '-C', installed, '--strip-components=1'], { timeout: 10_000 });
  // Its dependencies, and of the declarations only Node's, which a TypeScript user of a Node
  // library has: a declaration file the package's own need must come with it.
  const linked = [...Object.keys(pkg.dependencies), '@types/node'];
  for (const dep of linked) {
    const target = path.join(project, 'node_modules', dep);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.symlinkSync(fs.realpathSync(path.join(root, 'node_modules', dep)), target, 'dir');
  }
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true }));
}, 30_000);

afterAll(() => {
  if (project !== undefined) fs.rmSync(project, { recursive: true, force: true });
});

describe("require('tidegate') loads the library only", () => {
  let loaded: Loaded;
  beforeAll(() => {
    loaded = loadInProject('tidegate');
  });

  it('resolves to the installed package, not this checkout', () => {
    const own = loaded.files.filter((f) => f.includes(`${path.sep}tidegate${path.sep}dist${path.sep}`));
    expect(own.length).toBeGreaterThan(10);
    expect(own.every((f) => fs.realpathSync(f).startsWith(fs.realpathSync(project)))).toBe(true);
  });

  it.each(GATEWAY_ONLY)('does not load $name', ({ pattern }) => {
    expect(loaded.files.filter((f) => pattern.test(f))).toEqual([]);
  });

  it('requests none of the gateway libraries by name', () => {
    expect(loaded.requested.filter((r) => ['winston', 'prom-client', 'zod', 'yaml', 'express'].includes(r))).toEqual([]);
  });

  it('exports the Flow, operators, SSE codec, Express bridge and client, and not the gateway', () => {
    for (const name of ['Flow', 'createFlow', 'limitRate', 'onBackpressureBuffer', 'sseDecode', 'encodeSse', 'sse', 'sendFlow', 'connectSse', 'TidegateError', 'openaiAdapter', 'DEFAULT_KERNEL_UNSENT_BYTES', 'kernelQueueBytes', 'socketOptionsUnavailable', 'setUpstreamReceiveBytes']) {
      expect(loaded.exports).toContain(name);
    }
    for (const name of ['createGatewayApp', 'startGateway', 'createSimulator', 'playgroundRouter', 'ArrayQueue', 'relay', 'applyKernelBounds']) {
      expect(loaded.exports).not.toContain(name);
    }
  });
});

describe('the other entry points', () => {
  it("require('tidegate/gateway') gives the gateway", () => {
    const gateway = loadInProject('tidegate/gateway');
    expect(gateway.exports).toEqual(expect.arrayContaining(['createGatewayApp', 'startGateway', 'parseConfig', 'loadConfig', 'GatewayMetrics', 'createLogger']));
    expect(gateway.exports).not.toContain('relay');
    expect(gateway.files.some((f) => /[\\/]node_modules[\\/]zod[\\/]/.test(f))).toBe(true);
  });

  it("require('tidegate/gateway') loads no Redis client until a route keeps its resume log in Redis", () => {
    const gateway = loadInProject('tidegate/gateway');
    expect(gateway.files.filter((f) => /[\\/]node_modules[\\/]ioredis[\\/]/.test(f))).toEqual([]);
  });

  it("require('tidegate/simulator') and require('tidegate/playground') give theirs", () => {
    expect(loadInProject('tidegate/simulator').exports).toEqual(expect.arrayContaining(['createSimulator', 'findTranscript']));
    expect(loadInProject('tidegate/playground').exports).toEqual(expect.arrayContaining(['playgroundRouter', 'scenarioSchema']));
  });

  it('files outside the exports map are not reachable', () => {
    const out = spawnSync(process.execPath, ['-e', "require('tidegate/dist/flow/queue.js')"], { cwd: project, encoding: 'utf8', timeout: 15_000 });
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('the bin is in the package and runs', () => {
    const cli = path.join(project, 'node_modules', 'tidegate', 'dist', 'gateway', 'cli.js');
    const out = spawnSync(process.execPath, [cli, '--help'], { cwd: project, encoding: 'utf8', timeout: 15_000 });
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/--port/);
  });
});

describe('types resolve for a TypeScript user', () => {
  const USER_FILE = `
    import { createFlow, limitRate, type Flow, type SseEvent } from 'tidegate';
    import { parseConfig, type GatewayConfig } from 'tidegate/gateway';
    import { createSimulator } from 'tidegate/simulator';
    import { playgroundRouter } from 'tidegate/playground';
    const flow: Flow<number> = createFlow<number>((sink) => sink.complete()).pipe(limitRate(4));
    const config: GatewayConfig = parseConfig({ port: 0 });
    const event: SseEvent = { type: 'message', data: 'x', lastEventId: '' };
    export const port: number = config.port;
    export { flow, event, createSimulator, playgroundRouter };
  `;
  // If the imports resolved to \`any\`, these would type-check: the probe proves types were found.
  const WRONG_FILE = `
    import { createFlow } from 'tidegate';
    import { parseConfig } from 'tidegate/gateway';
    export const a: string = createFlow;
    export const b: string = parseConfig;
  `;

  it.each([
    ['node (typesVersions)', ts.ModuleResolutionKind.Node10, ts.ModuleKind.CommonJS],
    ['node16 (exports map)', ts.ModuleResolutionKind.Node16, ts.ModuleKind.Node16],
  ])('moduleResolution %s', (_label, resolution, module) => {
    const { user, wrong } = typecheck({ user: USER_FILE, wrong: WRONG_FILE }, resolution, module);
    expect(user).toEqual([]);
    expect(wrong).toHaveLength(2);
    expect(wrong.every((m) => m.includes('is not assignable to type'))).toBe(true);
  }, 30_000);

  it("type-checks the package's own declarations clean (skipLibCheck off) with only its dependencies installed", () => {
    const program = (fileName: string): string[] => {
      const file = path.join(project, fileName);
      fs.writeFileSync(file, USER_FILE);
      const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: false, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16, types: ['node'], typeRoots: [path.join(project, 'node_modules', '@types')] };
      // Only what the package's own declarations report: its dependencies' are theirs.
      return ts
        .getPreEmitDiagnostics(ts.createProgram([file], options))
        .filter((d) => d.file?.fileName.includes(`${path.sep}tidegate${path.sep}`) === true || d.file?.fileName === file)
        .map((d) => `${path.relative(project, d.file?.fileName ?? '')}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    };
    expect(program('lib-check.ts')).toEqual([]);
  }, 30_000);
});
