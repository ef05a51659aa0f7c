import * as http from 'node:http';
import type { SimRequestRecord, Simulator, SimulatorEvents } from '../../src/simulator';

/** One response read over a raw socket: status, headers and each body chunk with its arrival time. */
export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  chunks: { at: number; data: Buffer }[];
  body: Buffer;
  startedAt: number;
}

/** POSTs JSON and collects the whole response, chunk by chunk (bounded by `timeoutMs`). */
export function postRaw(
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const req = http.request(
      `${baseUrl}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, agent: false },
      (res) => {
        const chunks: { at: number; data: Buffer }[] = [];
        res.on('data', (d: Buffer) => chunks.push({ at: Date.now(), data: d }));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            chunks,
            body: Buffer.concat(chunks.map((c) => c.data)),
            startedAt,
          });
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`postRaw timed out after ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(JSON.stringify(body));
  });
}

/** The `data:` payloads of an SSE body (LF framing, one data line per event, as the simulator writes). */
export function dataLines(body: Buffer): string[] {
  return body
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice('data: '.length));
}

/** The `event:` names of an SSE body, in order. */
export function eventNames(body: Buffer): string[] {
  return body
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('event: '))
    .map((l) => l.slice('event: '.length));
}

/** Resolves with the first emission of `event`, or rejects after `timeoutMs`. */
export function within<T>(register: (cb: (v: T) => void) => void, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} not seen within ${timeoutMs} ms`)), timeoutMs);
    register((v) => {
      clearTimeout(timer);
      resolve(v);
    });
  });
}

/** Polls `predicate` every 10 ms until true or `timeoutMs` (then returns false). */
export async function until(predicate: () => boolean, timeoutMs = 1000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    if (predicate()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return predicate();
}

/** The record of the next `event` the simulator emits; rejects after `timeoutMs`. */
export function nextEvent(sim: Simulator, event: keyof SimulatorEvents, timeoutMs: number): Promise<SimRequestRecord> {
  return within<SimRequestRecord>((cb) => sim.once(event, cb), timeoutMs, event);
}
