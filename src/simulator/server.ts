/**
 * The simulator's HTTP server and its lifecycle: `createSimulator()` wires the settings, the
 * accounting ({@link createLedger}) and the routes ({@link handle}) to a `node:http` server,
 * tracks its sockets, and listens and closes. The public types live in `./types` and are
 * re-exported here.
 */
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createLedger } from './ledger';
import { handle } from './routes';
import { DEFAULTS, mergeSettings, Settings, validateSettings } from './settings';
import type { Simulator, SimulatorOptions } from './types';

export type { Simulator, SimulatorEvents, SimulatorOptions, SimulatorStats, SimRequestOutcome, SimRequestRecord } from './types';

/**
 * Creates the simulated LLM upstream: an HTTP/1.1 server (plain `node:http`) speaking
 * OpenAI Chat Completions (`POST /v1/chat/completions`) and Anthropic Messages
 * (`POST /v1/messages`), streaming (`stream: true`, SSE) or not, that replays recorded
 * transcripts at `tokensPerSecond` after `ttftMs`. Also `GET /healthz` and `GET /v1/models`.
 *
 * Transcript choice: the `x-sim-transcript` header, else the body's `model` if it names a
 * transcript (`sim`, `sim-basic`, `sim-long`, `sim-claude`, `sim-zh`, `sim-zh-split`,
 * `sim-synthetic-<n>`, or one passed in `transcripts`), else `defaultTranscript`. The
 * response echoes the requested `model`. `max_tokens` (and OpenAI `max_completion_tokens`)
 * cut the transcript and finish with `length` / `max_tokens`.
 *
 * Per-request headers (when `allowHeaderOverrides`): `x-sim-transcript`, `x-sim-fault`
 * (see {@link SimFault}), `x-sim-fault-after` (tokens), `x-sim-tokens-per-second` (a number or
 * `Infinity`), `x-sim-ttft-ms`, `x-sim-split-utf8` (`1`/`true`). A bad value gets 400.
 *
 * Backpressure: every frame is one `res.write()`; when it returns false nothing more is
 * written until 'drain' (counted in `drainWaits`). Non-stream responses wait `ttftMs` only.
 * A response whose `'close'` comes before it finished is counted as aborted and emits
 * `'request-aborted'`; its timers stop at once.
 *
 * @example
 * const sim = createSimulator({ tokensPerSecond: 200, ttftMs: 50 });
 * const { url } = await sim.listen();
 * const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x' });
 * // …
 * await sim.close();
 */
export function createSimulator(options: SimulatorOptions = {}): Simulator {
  let settings: Settings = mergeSettings(DEFAULTS, options);
  validateSettings(settings);
  const ledger = createLedger(() => settings.maxRecords);
  const context = { settings: (): Settings => settings, ledger };
  const { emitter } = ledger;
  const sockets = new Set<Socket>();
  let url: string | undefined;

  const server = http.createServer((req, res) => {
    handle(context, req, res).catch((err: unknown) => {
      // Programming errors only: requests' own failures are answered inside respond().
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err), type: 'server_error' } }));
      } else {
        res.destroy();
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const api: Simulator = {
    server,
    get url() {
      return url;
    },
    get stats() {
      return ledger.stats();
    },
    get requests() {
      return ledger.requests();
    },
    listen(port = 0, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        const onError = (e: Error): void => reject(e);
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const addr = server.address() as AddressInfo;
          const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
          url = `http://${h === '0.0.0.0' ? '127.0.0.1' : h === '[::]' ? '[::1]' : h}:${addr.port}`;
          resolve({ port: addr.port, url });
        });
      });
    },
    close() {
      ledger.closeLive();
      return new Promise((resolve) => {
        if (!server.listening) {
          for (const s of sockets) s.destroy();
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      });
    },
    configure(patch) {
      const next = mergeSettings(settings, patch);
      validateSettings(next);
      settings = next;
    },
    on(event, listener) {
      emitter.on(event, listener);
      return api;
    },
    once(event, listener) {
      emitter.once(event, listener);
      return api;
    },
    off(event, listener) {
      emitter.off(event, listener);
      return api;
    },
  };
  return api;
}
