import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Transport from 'winston-transport';
import { parseConfig } from '../../src/gateway/config';
import { createLogger } from '../../src/gateway/logger';
import type { StreamPolicyFn } from '../../src/gateway/relay/relay';
import { startGateway, type RunningGateway } from '../../src/gateway/server';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator';
import { trackOpen } from '../harness/net';

/** One captured log entry (winston's info object). */
export type LogLine = Record<string, unknown>;

/** A winston transport that keeps every entry in memory. */
export class CaptureTransport extends Transport {
  readonly lines: LogLine[] = [];
  override log(info: LogLine, next: () => void): void {
    this.lines.push(info);
    next();
  }
  /** The per-stream lines. */
  streams(): LogLine[] {
    return this.lines.filter((l) => l.message === 'stream');
  }
}

/** The x-sim-* headers tests may forward through the gateway. */
export const SIM_HEADERS = ['x-sim-fault', 'x-sim-fault-after', 'x-sim-ttft-ms', 'x-sim-tokens-per-second', 'x-sim-transcript'];

export interface TestGateway {
  gateway: RunningGateway;
  sim: Simulator;
  logs: CaptureTransport;
  close(): Promise<void>;
}

/**
 * A simulator and a gateway in front of it on 127.0.0.1 ephemeral ports; the OpenAI and
 * Anthropic routes forward the x-sim-* headers so each test picks its fault per request.
 */
export async function startTestGateway(
  options: { config?: Record<string, unknown>; sim?: SimulatorOptions; policies?: Record<string, StreamPolicyFn>; routes?: unknown[] } = {},
): Promise<TestGateway> {
  const sim = createSimulator({ tokensPerSecond: 500, ttftMs: 5, ...options.sim });
  const { url } = await sim.listen(0, '127.0.0.1');
  const logs = new CaptureTransport();
  const config = parseConfig({
    port: 0,
    retry: { baseDelayMs: 10 },
    routes: options.routes ?? [
      { path: '/v1/chat/completions', provider: 'openai', forwardHeaders: ['content-type', ...SIM_HEADERS] },
      { path: '/v1/messages', provider: 'anthropic', forwardHeaders: ['content-type', 'anthropic-version', ...SIM_HEADERS] },
    ],
    ...options.config,
    upstream: { url, ...((options.config?.upstream as object | undefined) ?? {}) },
  });
  const gateway = await startGateway(config, { logger: createLogger({ transports: [logs] }), policies: options.policies });
  const close = async (): Promise<void> => {
    untrack();
    await gateway.close();
    await sim.close();
  };
  const untrack = trackOpen(close);
  return { gateway, sim, logs, close };
}

/** Parses Prometheus text exposition into `name{labels}` → value (a small regex, no prom-client internals). */
export function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${JSON.stringify(line)}`);
    out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** A gateway in front of a test upstream, as {@link resumableGateway} starts it. */
export interface ResumableGateway {
  gw: RunningGateway;
  upstream: http.Server;
  logs: CaptureTransport;
  /** Closes the gateway, then the upstream and its connections. */
  close(): Promise<void>;
}

/**
 * A gateway whose one route, `/events`, is a resumable passthrough (`data: [DONE]` ends a
 * stream) in front of an upstream `handler` serves on 127.0.0.1; `retry` and the route's
 * `timeouts` override the defaults (`retry.baseDelayMs` 10).
 */
export async function resumableGateway(handler: http.RequestListener, options: { retry?: Record<string, number>; timeouts?: Record<string, number> } = {}): Promise<ResumableGateway> {
  const upstream = http.createServer(handler);
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const logs = new CaptureTransport();
  const routes = [{ path: '/events', provider: 'passthrough', resumable: true, terminator: { data: '[DONE]' }, ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }) }];
  const gw = await startGateway(parseConfig({ port: 0, upstream: { url }, retry: { baseDelayMs: 10, ...options.retry }, routes }), { logger: createLogger({ transports: [logs] }) });
  return {
    gw,
    upstream,
    logs,
    close: async () => {
      await gw.close();
      upstream.closeAllConnections();
      await new Promise<void>((r) => upstream.close(() => r()));
    },
  };
}

/** `tidegate_upstream_requests_total` by outcome (those above 0), and the sum of `tidegate_upstream_retries_total`. */
export async function upstreamCounts(gw: RunningGateway): Promise<{ requests: Map<string, number>; retries: number }> {
  const requests = new Map<string, number>();
  let retries = 0;
  for (const [key, value] of parsePrometheus(await gw.app.gateway.metrics.registry.metrics())) {
    const outcome = /^tidegate_upstream_requests_total\{.*outcome="([^"]+)"/.exec(key);
    if (outcome && value > 0) requests.set(outcome[1], (requests.get(outcome[1]) ?? 0) + value);
    if (key.startsWith('tidegate_upstream_retries_total{')) retries += value;
  }
  return { requests, retries };
}

/** A whole HTTP answer as {@link ask} read it. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a connection of its own, read to its end; a `body` goes as JSON. */
export function ask(port: number, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ method, host: '127.0.0.1', port, path, agent: false, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
