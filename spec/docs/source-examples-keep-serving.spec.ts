import { fork, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';

// Every docs/*.md code block that defines a source or an sse()/sendFlow() route is tagged
// `runnable` and run here in a child process (built dist/, as a user would import it), with an
// unbounded reader and a stalled one (a socket that reads nothing) on each of its routes. The
// child must keep answering another HTTP request within 1 s: a source that starves the event
// loop under unbounded demand fails this.

const ROOT = path.resolve(__dirname, '../..');
const DOCS = path.join(ROOT, 'docs');
const DIST = path.join(ROOT, 'dist', 'index.js');
const EXPRESS = require.resolve('express');

interface Block {
  file: string;
  line: number;
  info: string;
  code: string;
}

function blocks(): Block[] {
  const out: Block[] = [];
  for (const name of fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).sort()) {
    const text = fs.readFileSync(path.join(DOCS, name), 'utf8');
    const fence = /^```([^\n]*)\n([\s\S]*?)^```/gm;
    for (let m = fence.exec(text); m !== null; m = fence.exec(text)) {
      const line = text.slice(0, m.index).split('\n').length;
      out.push({ file: name, line, info: (m[1] as string).trim(), code: m[2] as string });
    }
  }
  return out;
}

const isCode = (b: Block): boolean => /^(ts|js|typescript|javascript)\b/.test(b.info);
const isRunnable = (b: Block): boolean => isCode(b) && /\brunnable\b/.test(b.info);
/** A block that builds a source or serves a flow over HTTP. */
const definesSourceOrRoute = (b: Block): boolean =>
  /\b(createFlow|generate)\s*[<(]/.test(b.code) || (/\bapp\.(get|post)\s*\(/.test(b.code) && /\b(sse|sendFlow)\s*\(/.test(b.code));

const ALL = blocks();
const RUNNABLE = ALL.filter(isRunnable);

/** The example as CommonJS, its imports pointed at this checkout, plus the serving harness. */
function program(block: Block): { js: string; routes: string[] } {
  const source = /\bsource=(\w+)/.exec(block.info)?.[1];
  const routes = [...block.code.matchAll(/\bapp\.get\(\s*'([^']+)'/g)].map((m) => m[1] as string);
  const code = block.code
    .replace(/^app\.listen\([^)]*\);?\s*$/m, '')
    .replace(/'http:\/\/127\.0\.0\.1:9000/g, "process.env.DOCS_UPSTREAM + '")
    // An example that relays its own routes names the port it listens on, 3000.
    .replace(/'http:\/\/127\.0\.0\.1:3000/g, "'http://127.0.0.1:' + globalThis.__port + '");
  let js = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;
  js = js.replace(/require\("tidegate"\)/g, `require(${JSON.stringify(DIST)})`).replace(/require\("express"\)/g, `require(${JSON.stringify(EXPRESS)})`);
  const harness = [
    `const __express = require(${JSON.stringify(EXPRESS)});`,
    `const __tg = require(${JSON.stringify(DIST)});`,
    `const __app = typeof app !== 'undefined' ? app : __express();`,
  ];
  if (source !== undefined) {
    // A source example is evaluated once per subscriber: a stream it wraps is read only once.
    js = `function __make() {\n${js}\nreturn ${source};\n}\n`;
    routes.push('/__source', '/__buffered');
    harness.push(
      `__app.get('/__source', __tg.sse(() => __make()));`,
      `__app.get('/__buffered', __tg.sse(() => __make().pipe(__tg.onBackpressureBuffer({ maxItems: 1000, overflow: 'terminate' }))));`,
      // An unbounded subscriber in the process itself (plain subscribe() requests Infinity).
      `__make().subscribe({ error: () => undefined });`,
    );
  }
  harness.push(
    `__app.get('/__ping', (_req, res) => res.end('pong'));`,
    `const __server = __app.listen(0, '127.0.0.1', () => process.send({ port: (globalThis.__port = __server.address().port) }));`,
  );
  return { js: `${js}\n;{\n${harness.join('\n')}\n}\n`, routes };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function ping(port: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/__ping', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (body === 'pong' ? resolve(Date.now() - started) : reject(new Error(`ping answered ${body}`))));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

interface Reader {
  status: number;
  bytes: number;
  sawData: boolean;
  request: http.ClientRequest;
}

/** A client that reads everything as fast as it arrives. */
function unboundedReader(port: number, route: string): Reader {
  const reader: Reader = { status: 0, bytes: 0, sawData: false, request: undefined as unknown as http.ClientRequest };
  let tail = '';
  reader.request = http.get({ host: '127.0.0.1', port, path: route, agent: false }, (res) => {
    reader.status = res.statusCode ?? 0;
    res.on('data', (chunk: Buffer) => {
      reader.bytes += chunk.length;
      if (!reader.sawData) {
        const text = tail + chunk.toString('latin1', 0, Math.min(chunk.length, 4096));
        reader.sawData = /(^|\n)data:/.test(text);
        tail = text.slice(-8);
      }
    });
    res.on('error', () => undefined);
  });
  reader.request.on('error', () => undefined);
  return reader;
}

/** A client that sends its request and never reads a byte of the answer. */
function stalledReader(port: number, route: string): net.Socket {
  const socket = net.connect({ host: '127.0.0.1', port }, () => {
    socket.write(`GET ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
    socket.pause();
  });
  socket.on('error', () => undefined);
  return socket;
}

/** An endless SSE upstream for examples that relay one (`http://127.0.0.1:9000` in the docs). */
let upstream: http.Server;
let upstreamUrl = '';
beforeAll(async () => {
  upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    let i = 0;
    const timer = setInterval(() => res.write(`data: {"n":${i++}}\n\n`), 5);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

let tmp = '';
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tidegate-docs-'));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('docs code examples that define a source or a route', () => {
  it('are all tagged runnable, and there are some', () => {
    const untagged = ALL.filter((b) => isCode(b) && !isRunnable(b) && definesSourceOrRoute(b)).map((b) => `${b.file}:${b.line}`);
    expect(untagged).toEqual([]);
    expect(RUNNABLE.length).toBeGreaterThanOrEqual(5);
    expect(fs.existsSync(DIST)).toBe(true); // built by `npm run build`
  });

  it.each(RUNNABLE.map((b) => [`${b.file}:${b.line}`, b] as const))(
    '%s keeps the process answering under an unbounded and a stalled reader',
    async (_where, block) => {
      const { js, routes } = program(block);
      expect(routes.length).toBeGreaterThan(0);
      const file = path.join(tmp, `${block.file.replace(/\W/g, '_')}-${block.line}.js`);
      fs.writeFileSync(file, js);
      let stderr = '';
      const child: ChildProcess = fork(file, [], {
        env: { ...process.env, DOCS_UPSTREAM: upstreamUrl, NODE_ENV: 'test' },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const readers: Reader[] = [];
      const stalled: net.Socket[] = [];
      try {
        const port = await new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`example did not start within 10 s: ${stderr}`)), 10_000);
          child.once('message', (m: { port: number }) => {
            clearTimeout(timer);
            resolve(m.port);
          });
          child.once('exit', (code) => {
            clearTimeout(timer);
            reject(new Error(`example exited (${String(code)}): ${stderr}`));
          });
        });
        for (const route of routes) {
          readers.push(unboundedReader(port, route));
          stalled.push(stalledReader(port, route));
        }
        await sleep(300);
        const latencies: number[] = [];
        for (let k = 0; k < 3; k++) {
          latencies.push(await ping(port, 1000));
          await sleep(150);
        }
        expect(latencies.every((ms) => ms < 1000)).toBe(true);
        for (const [i, reader] of readers.entries()) {
          expect([routes[i], reader.status, reader.sawData]).toEqual([routes[i], 200, true]);
        }
      } finally {
        for (const r of readers) r.request.destroy();
        for (const s of stalled) s.destroy();
        child.kill('SIGKILL');
        await exited;
      }
    },
    20_000,
  );
});
