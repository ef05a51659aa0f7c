import path from 'node:path';
import ts from 'typescript';

/*
 * TypeScript 7's `tsc --init` turns on `exactOptionalPropertyTypes`: a property declared
 * `x?: T` then rejects an explicit `undefined`, so `{ heartbeatMs: cfg.heartbeat }` with
 * `cfg.heartbeat: number | undefined` fails to compile. Our public options declare `x?: T | undefined`.
 *
 * Each probe below is a user's file, type-checked (never run) against src/ with the flag on.
 * src/ itself is not written for the flag, so only the probes' own diagnostics count.
 */

const PROBES: Readonly<Record<string, string>> = {
  // The harness itself: a property without `| undefined` must be reported, or the other tests prove nothing.
  control: `
    interface Strict { a?: number }
    export const s: Strict = { a: undefined };
  `,
  express: `
    import type { ServerResponse } from 'node:http';
    import { sendFlow, sse, type BridgeElement, type Flow, type SendFlowOptions } from '../../src';
    declare const res: ServerResponse;
    declare const flow: Flow<BridgeElement>;
    const options: SendFlowOptions = {
      prefetch: undefined, maxBufferedBytes: undefined, budget: undefined, maxElementBytes: undefined,
      reserveBytes: undefined, stallTimeoutMs: undefined, heartbeatMs: undefined, retryMs: undefined,
      headers: undefined, terminalEvent: undefined, formatError: undefined, sendHttpError: undefined,
      signal: undefined, onFinish: undefined, onFirstElement: undefined, onWritable: undefined,
    };
    sendFlow(res, flow, options);
    export const handler = sse(() => flow, { heartbeatMs: undefined, retryMs: undefined });
  `,
  flow: `
    import type { Readable } from 'node:stream';
    import { createFlow, fromReadable, onBackpressureBuffer } from '../../src';
    declare const readable: Readable;
    export const buffered = onBackpressureBuffer<string>({
      maxItems: undefined, maxBytes: undefined, sizeOf: undefined, overflow: undefined, onOverflow: undefined,
      onDiscard: undefined, onBufferChange: undefined, budget: undefined,
    });
    export const created = createFlow<number>(() => undefined, { overflow: undefined });
    export const read = fromReadable(readable, { destroyOnCancel: undefined, onCancel: undefined, parked: undefined });
    export const subscription = read.subscribeWithDemand({ onSubscribe: undefined, next: undefined, error: undefined, complete: undefined });
  `,
  sse: `
    import { createFrameSplitter, createSseParser, sseDecode, sseFrames } from '../../src';
    export const parser = createSseParser({
      onEvent: () => undefined, onRetry: undefined, onComment: undefined, onLastEventId: undefined,
      maxLineBytes: undefined, maxEventBytes: undefined, onError: undefined,
    });
    export const splitter = createFrameSplitter({ onFrame: () => undefined, maxEventBytes: undefined, maxFrameBytes: undefined, onError: undefined });
    export const decode = sseDecode({ maxLineBytes: undefined, maxEventBytes: undefined, onRetry: undefined, onComment: undefined, onLastEventId: undefined });
    export const frames = sseFrames({ maxEventBytes: undefined, maxFrameBytes: undefined, queued: undefined });
  `,
  client: `
    import { backoffDelayMs, connectSse, openSse, type ConnectSseOptions } from '../../src';
    const options: ConnectSseOptions = {
      method: undefined, headers: undefined, body: undefined, signal: undefined, lastEventId: undefined,
      reconnect: undefined, maxAttempts: undefined, initialDelayMs: undefined, maxDelayMs: undefined,
      idleTimeoutMs: undefined, isTerminal: undefined, fetch: undefined, agent: undefined, random: undefined,
      maxLineBytes: undefined, maxEventBytes: undefined, maxErrorBodyBytes: undefined, onOpen: undefined,
      onReconnect: undefined, onComment: undefined,
    };
    export const events = connectSse('http://127.0.0.1:1/', options);
    export const opened = openSse('http://127.0.0.1:1/', { idleTimeoutMs: undefined });
    export const delay = backoffDelayMs({ attempt: 1, baseMs: 1, maxDelayMs: 1, random: Math.random, retryAfterMs: undefined });
  `,
  upstream: `
    import { createPassthroughAdapter, fetchUpstream, openaiAdapter, openUpstreamStream, withRetries, type GatewayEvent, type ProviderAdapter, type UpstreamRequest } from '../../src';
    const request: UpstreamRequest = {
      url: 'http://127.0.0.1:1/', method: undefined, headers: undefined, body: undefined, signal: undefined,
      connectTimeoutMs: undefined, firstByteTimeoutMs: undefined, idleTimeoutMs: undefined, onRead: undefined, readBytes: undefined,
    };
    export const stream = openUpstreamStream(request);
    export const body = fetchUpstream(request);
    export const retried = withRetries(async () => 1, { maxAttempts: undefined, baseDelayMs: undefined, maxDelayMs: undefined, maxRetryAfterMs: undefined, retryStatuses: undefined }, { signal: undefined, onRetry: undefined, random: undefined });
    export const adapter = createPassthroughAdapter({ event: undefined, data: undefined });
    export const custom: ProviderAdapter = { ...openaiAdapter, needsDecode: undefined, nonStreamBody: undefined };
    export const event: GatewayEvent = { type: 'delta', text: '', wire: { data: '' }, usage: { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined } };
  `,
  gateway: `
    import { createGatewayApp, createLogger, GatewayMetrics, loadConfig, startGateway, type GatewayConfig } from '../../src/gateway';
    declare const config: GatewayConfig;
    export const loaded = loadConfig({ file: undefined, env: undefined, overrides: undefined, extraRoutes: undefined });
    export const logger = createLogger({ level: undefined, silent: undefined, transports: undefined });
    export const metrics = new GatewayMetrics({ defaultMetrics: undefined });
    export const untrack = metrics.track({ bufferedBytes: () => 0, upstreamPaused: () => false, describe: undefined });
    export const app = createGatewayApp(config, { logger: undefined, upstreamUrl: undefined, policies: undefined, metrics: undefined });
    export const running = startGateway(config, { logger: undefined, policies: undefined, metrics: undefined });
  `,
  simulator: `
    import { createSimulator } from '../../src/simulator';
    import { playgroundRouter } from '../../src/playground';
    export const simulator = createSimulator({
      tokensPerSecond: undefined, ttftMs: undefined, defaultTranscript: undefined, transcripts: undefined, fault: undefined,
      faultAfterTokens: undefined, retryAfterSeconds: undefined, splitUtf8: undefined, splitDelayMs: undefined,
      maxBodyBytes: undefined, allowHeaderOverrides: undefined, maxRecords: undefined,
    });
    export const router = playgroundRouter({
      maxConcurrentRuns: undefined, maxRunMs: undefined, unboundedCapBytes: undefined, telemetryIntervalMs: undefined,
      stallTimeoutMs: undefined, startTimeoutMs: undefined, retainMs: undefined,
    });
  `,
};

const probeFile = (name: string): string => path.join(__dirname, `exact-optional.${name}.probe.ts`);

let program: ts.Program;

beforeAll(() => {
  const root = path.resolve(__dirname, '../..');
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.build.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (parsed === undefined) throw new Error('tsconfig.build.json did not parse');
  const options: ts.CompilerOptions = {
    ...parsed.options,
    strict: true,
    skipLibCheck: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    declaration: false,
    noUnusedLocals: false,
  };
  const probes = new Map(Object.entries(PROBES).map(([name, text]) => [probeFile(name), text]));
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => probes.has(f) || fileExists.call(host, f);
  host.readFile = (f) => probes.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, lang, onError, shouldCreate) => {
    const text = probes.get(f);
    return text === undefined ? getSourceFile.call(host, f, lang, onError, shouldCreate) : ts.createSourceFile(f, text, lang);
  };
  program = ts.createProgram([...probes.keys()], options, host);
}, 60_000);

/** The probe's own errors as `line: message`; errors inside src/ are not the user's. */
function probeErrors(name: string): string[] {
  const file = program.getSourceFile(probeFile(name));
  if (file === undefined) throw new Error(`probe ${name} missing from the program`);
  return [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)].map((d) => {
    const line = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line + 1;
    return `${line}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('public options under exactOptionalPropertyTypes', () => {
  it('reports an explicit undefined given to a property declared without it (the check works)', () => {
    const errors = probeErrors('control');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/exactOptionalPropertyTypes/);
  });

  it.each(['express', 'flow', 'sse', 'client', 'upstream', 'gateway', 'simulator'])('accepts undefined for every optional option (%s)', (name) => {
    expect(probeErrors(name)).toEqual([]);
  });
});
