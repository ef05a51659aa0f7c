import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/gateway/config';
import { resolveRoutes } from '../../src/gateway/config/routes';
import { findAll, NginxDirective, parseNginxConf } from './nginx-conf';

const ROOT = path.join(__dirname, '../..');
const HEARTBEAT_MS = 15_000;

interface ComposeService {
  build?: string | { context?: string; dockerfile?: string };
  image?: string;
  command?: string | string[];
  environment?: Record<string, string> | string[];
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
}

const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;

function env(s: ComposeService): Record<string, string> {
  if (Array.isArray(s.environment)) {
    return Object.fromEntries(s.environment.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  }
  return Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));
}

function command(s: ComposeService): string[] {
  return Array.isArray(s.command) ? s.command : (s.command ?? '').split(/\s+/).filter(Boolean);
}

/** The node flags `npm start` runs the gateway with (package.json). */
const START_NODE_FLAGS = (/\bnode((?: --\S+)*) dist\/gateway\/cli\.js\b/.exec((JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '')?.[1] ?? '').split(' ').filter(Boolean);

function dependsOn(s: ComposeService): string[] {
  return Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
}

function flag(cmd: string[], name: string): string | undefined {
  const i = cmd.indexOf(name);
  return i >= 0 ? cmd[i + 1] : undefined;
}

/** nginx time value to ms (`3600s`, `1h`, `90`, `1m30s`). */
function nginxTimeMs(value: string): number {
  if (!/^(\d+(ms|s|m|h|d)?)+$/.test(value)) throw new Error(`bad nginx time ${JSON.stringify(value)}`);
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  for (const m of value.matchAll(/(\d+)(ms|s|m|h|d)?/g)) total += Number(m[1]) * units[m[2] ?? 's'];
  return total;
}

describe('docker-compose.yml', () => {
  const gateways = ['gateway-a', 'gateway-b'];

  it('defines two gateway replicas, redis, simulator and edge services', () => {
    expect(Object.keys(services).sort()).toEqual(['edge', 'gateway-a', 'gateway-b', 'redis', 'simulator']);
  });

  it.each(gateways)('builds %s from ./Dockerfile and runs dist/gateway/cli.js on port 8080', (name) => {
    const g = services[name];
    const build = typeof g.build === 'string' ? { context: g.build } : g.build;
    expect(build?.context).toBe('.');
    expect(build && 'dockerfile' in build ? build.dockerfile : 'Dockerfile').toBe('Dockerfile');
    expect(command(g)).toEqual(['node', ...START_NODE_FLAGS, 'dist/gateway/cli.js']);
    expect(env(g)).toMatchObject({ PORT: '8080', HOST: '0.0.0.0' });
  });

  it.each(gateways)('points %s at the simulator service on the port the simulator listens on', (name) => {
    const upstream = new URL(env(services[name]).UPSTREAM_URL);
    expect(upstream.hostname).toBe('simulator');
    const sim = command(services.simulator);
    expect(sim.slice(0, 2)).toEqual(['node', 'dist/simulator/cli.js']);
    expect(flag(sim, '--port')).toBe(upstream.port);
    expect(flag(sim, '--host')).toBe('0.0.0.0');
    expect(dependsOn(services[name])).toContain('simulator');
  });

  it.each(gateways)('connects %s to the redis service and mounts deploy/gateway.yaml as its config', (name) => {
    const g = services[name];
    const redisUrl = new URL(env(g).REDIS_URL);
    expect(redisUrl.hostname).toBe('redis');
    expect(services.redis.expose).toContain(redisUrl.port);
    expect(dependsOn(g)).toContain('redis');
    const mount = (g.volumes ?? []).find((v) => v.startsWith('./deploy/gateway.yaml:'));
    expect(mount?.split(':')[1]).toBe(env(g).TIDEGATE_CONFIG);
  });

  it('runs redis without persistence, from the official image', () => {
    const r = services.redis;
    expect(r.image).toMatch(/^redis:7/);
    const cmd = command(r);
    expect(flag(cmd, '--save')).toBe('');
    expect(flag(cmd, '--appendonly')).toBe('no');
  });

  it('runs the simulator from the same image as the gateways', () => {
    for (const name of gateways) {
      expect(services.simulator.build).toEqual(services[name].build);
      expect(services.simulator.image).toBe(services[name].image);
    }
  });

  it('runs edge as nginx:stable-alpine with deploy/nginx.conf mounted, 8081 -> 80, after both gateways', () => {
    const e = services.edge;
    expect(e.image).toBe('nginx:stable-alpine');
    expect(e.volumes).toContain('./deploy/nginx.conf:/etc/nginx/nginx.conf:ro');
    expect(e.ports).toContain('8081:80');
    for (const name of gateways) expect(dependsOn(e)).toContain(name);
  });
});

describe('deploy/gateway.yaml', () => {
  it('is a valid gateway config serving every default route, the streaming ones resumable through redis (the url from REDIS_URL)', () => {
    const config = loadConfig({ file: path.join(ROOT, 'deploy/gateway.yaml'), env: { REDIS_URL: 'redis://redis:6379' } });
    const routes = resolveRoutes(config, 'http://simulator:9090');
    const defaults = resolveRoutes(loadConfig({ env: {} }), 'http://simulator:9090');
    expect(routes.map((r) => [r.path, r.provider, r.api])).toEqual(defaults.map((r) => [r.path, r.provider, r.api]));
    const streaming = ['chat', 'responses', 'completions', 'messages'];
    for (const r of routes) expect([r.api, r.resume?.store]).toEqual([r.api, streaming.includes(r.api) ? 'redis' : undefined]);
    expect(config.redis.url).toBe('redis://redis:6379');
  });

  it('reads the client address nginx forwards, so the per-client cap counts clients, not nginx', () => {
    const config = loadConfig({ file: path.join(ROOT, 'deploy/gateway.yaml'), env: {} });
    expect(config.limits.clientAddressHeader).toBe('x-forwarded-for');
    expect(fs.readFileSync(path.join(ROOT, 'deploy/nginx.conf'), 'utf8')).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
  });
});

describe('Dockerfile', () => {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');

  it('is a multi-stage node:20-slim build that runs npm ci and npm run build', () => {
    expect(text.match(/^FROM node:20-slim\b/gm)).toHaveLength(2);
    expect(text).toMatch(/^RUN npm ci\b/m);
    expect(text).toMatch(/^RUN npm run build\b/m);
    expect(text).toMatch(/^COPY --from=build /m);
  });

  it('copies every file `npm run build` reads before it runs it', () => {
    const lines = text.split('\n');
    const buildAt = lines.findIndex((l) => /^RUN npm run build\b/.test(l));
    const copied = lines
      .slice(0, buildAt)
      .filter((l) => /^COPY (?!--from)/.test(l))
      .flatMap((l) => l.replace(/^COPY /, '').trim().split(/\s+/).slice(0, -1));
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    // The build script's files, the tsconfig it names (and the one that extends), the sources.
    const needed = [...pkg.scripts.build.split(/\s+/).filter((w) => fs.existsSync(path.join(ROOT, w)) && fs.statSync(path.join(ROOT, w)).isFile()), 'tsconfig.build.json', 'tsconfig.json', 'src/index.ts'];
    expect(needed).toContain('scripts/build-dist.js');
    for (const file of needed) expect([file, copied.find((c) => file === c || file.startsWith(`${c.replace(/\/$/, '')}/`))]).toEqual([file, expect.any(String)]);
  });

  it('starts the gateway by default, with the node flags of npm start', () => {
    expect(START_NODE_FLAGS).toEqual([]);
    const cmd = /^CMD (\[.*\])$/m.exec(text)?.[1];
    expect(cmd === undefined ? undefined : JSON.parse(cmd)).toEqual(['node', ...START_NODE_FLAGS, 'dist/gateway/cli.js']);
  });
});

describe('deploy/nginx.conf', () => {
  const conf = parseNginxConf(fs.readFileSync(path.join(ROOT, 'deploy/nginx.conf'), 'utf8'));
  const servers = findAll(conf, 'server').filter((d) => d.children);
  const proxied = findAll(conf, 'location').filter((l) => findAll(l.children ?? [], 'proxy_pass').length > 0);

  function one(scope: NginxDirective[], name: string): string[] {
    const found = findAll(scope, name);
    expect(found.map((d) => d.name)).toEqual([name]);
    return found[0].args;
  }

  it('proxies round-robin to both gateway replicas on port 8080, without sticky sessions', () => {
    expect(proxied).toHaveLength(1);
    const target = one(proxied[0].children ?? [], 'proxy_pass')[0];
    const upstreamName = new URL(target).hostname;
    const upstream = findAll(conf, 'upstream').find((u) => u.args[0] === upstreamName);
    expect(upstream).toBeDefined();
    const members = upstream?.children ?? [];
    expect(findAll(members, 'server').map((d) => d.args[0])).toEqual(['gateway-a:8080', 'gateway-b:8080']);
    for (const balancing of ['ip_hash', 'hash', 'sticky', 'least_conn', 'random']) expect(findAll(members, balancing)).toEqual([]);
  });

  it('listens on port 80 (the container side of 8081:80)', () => {
    expect(servers.flatMap((s) => findAll(s.children ?? [], 'listen').map((d) => d.args[0]))).toContain('80');
  });

  it.each([
    ['proxy_buffering', ['off']],
    ['proxy_cache', ['off']],
    ['gzip', ['off']],
    ['proxy_http_version', ['1.1']],
  ])('sets %s %s for the proxied location', (name, args) => {
    expect(one(proxied[0].children ?? [], name)).toEqual(args);
  });

  it('clears the Connection header so upstream keep-alive works', () => {
    const headers = findAll(proxied[0].children ?? [], 'proxy_set_header').map((d) => d.args);
    expect(headers).toContainEqual(['Connection', '']);
  });

  it('sets proxy_read_timeout above the 15 s heartbeat interval', () => {
    const ms = nginxTimeMs(one(proxied[0].children ?? [], 'proxy_read_timeout')[0]);
    expect(ms).toBeGreaterThan(2 * HEARTBEAT_MS);
    expect(ms).toBe(3_600_000);
  });

  it('honours X-Accel-Buffering from the gateway (not ignored, not hidden)', () => {
    for (const d of [...findAll(conf, 'proxy_ignore_headers'), ...findAll(conf, 'proxy_hide_header')]) {
      expect(d.args.map((a) => a.toLowerCase())).not.toContain('x-accel-buffering');
    }
  });

  it('does not turn buffering or compression back on anywhere', () => {
    for (const name of ['proxy_buffering', 'gzip', 'proxy_cache']) {
      for (const d of findAll(conf, name)) expect(d.args).toEqual(['off']);
    }
    expect(findAll(conf, 'proxy_ignore_client_abort').map((d) => d.args)).not.toContainEqual(['on']);
  });
});

describe('parseNginxConf', () => {
  it('parses blocks, quotes and comments', () => {
    const parsed = parseNginxConf('http { # c\n  a "x;y" \'\' ;\n  b { c 1; }\n}\n');
    expect(parsed).toEqual([
      { name: 'http', args: [], children: [{ name: 'a', args: ['x;y', ''] }, { name: 'b', args: [], children: [{ name: 'c', args: ['1'] }] }] },
    ]);
  });

  it('rejects unbalanced braces and a missing semicolon', () => {
    expect(() => parseNginxConf('http { a 1;')).toThrow(/unbalanced/);
    expect(() => parseNginxConf('a 1')).toThrow(/without ;/);
    expect(() => parseNginxConf('}')).toThrow(/unexpected/);
  });
});
