import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { PacedTarget } from './paced-response';
import type { PlaygroundRun } from './run';
import type { TelemetryHub, TelemetryTarget } from './telemetry';

/** Runs one page stream may carry at once (compare mode uses two). */
export const MAX_WATCHED_RUNS = 4;

/**
 * One page's view of its runs on a single SSE response (`GET /watch?run=…&run=…`): each run's
 * telemetry (`event: sample`, then `event: end`, the hub's frames; the sample names its `id`) and
 * the text its emulated client read (`event: text`, `data: {"id","text"}`, UTF-8 decoded per
 * run; `event: closed`, `data: {"id","reset"}` when that run's data ends). A browser allows six
 * connections per host: a page that held two per run could not run compare mode in a second tab.
 *
 * The response ends once every run's telemetry has ended. When the page leaves (`'close'`),
 * every run's emulated client goes with it, so each run ends as `client_closed`.
 *
 * Held: nothing of its own; the response's queue is bounded by the runs' pacing (the emulated
 * clients wait for `'drain'`) and by each hub's `maxQueuedBytes`.
 */
export class PageStream {
  private readonly events = new EventEmitter();
  private open = 0;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    // One listener each on the response, fanned out to every run's slot.
    this.events.setMaxListeners(8 * MAX_WATCHED_RUNS);
    res.on('drain', this.onDrain);
    res.once('close', this.onClose);
  }

  /**
   * Carries every run of `watched` (their hubs were checked for room: {@link TelemetryHub.full}):
   * each one's telemetry, and the data of each one still waiting (it starts now).
   */
  carry(watched: readonly { run: PlaygroundRun; hub: TelemetryHub }[]): void {
    this.open += watched.length;
    for (const { run } of watched) if (run.state === 'waiting') run.start(new RunChannel(run.id, this.res, this.events));
    for (const { hub } of watched) hub.subscribe(new TelemetrySlot(this.res, this.events, () => this.ended()));
  }

  private ended(): void {
    this.open--;
    if (this.open === 0 && !this.res.writableEnded) {
      this.res.end();
      this.detach();
    }
  }

  private readonly onDrain = (): void => {
    this.events.emit('drain');
  };

  private readonly onClose = (): void => {
    this.detach();
    this.events.emit('close');
    this.events.removeAllListeners();
  };

  private detach(): void {
    this.res.off('drain', this.onDrain);
    this.res.off('close', this.onClose);
  }
}

/** An SSE frame with a JSON payload. */
function frame(event: string, data: unknown): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * One run's data on a page stream: what its {@link PacedResponse} passes on, sent as
 * `event: text` frames. Its `'drain'` and `'close'` are the shared response's.
 */
export class RunChannel implements PacedTarget {
  headersSent = false;
  statusCode = 200;
  writableEnded = false;
  destroyed = false;
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    private readonly id: string,
    private readonly res: ServerResponse,
    private readonly events: EventEmitter,
  ) {}

  /** The run's own headers describe an SSE stream inside this one: nothing to send. */
  setHeader(): void {}

  /** The run's head is committed; the page stream's own was sent already. */
  writeHead(): void {
    this.headersSent = true;
  }

  flushHeaders(): void {
    this.headersSent = true;
  }

  write(chunk: Buffer): boolean {
    this.headersSent = true;
    if (this.writableEnded || this.destroyed || this.res.writableEnded || this.res.destroyed) return false;
    const text = this.decoder.write(chunk);
    return text === '' ? true : this.res.write(frame('text', { id: this.id, text }));
  }

  end(): void {
    this.close(false);
  }

  /** The bridge reset the run's "connection" (a stalled client): the page is told, the shared stream stays. */
  destroy(): void {
    this.close(true);
  }

  on(event: 'close' | 'drain', listener: () => void): this {
    this.events.on(event, listener);
    return this;
  }

  off(event: 'close' | 'drain', listener: () => void): this {
    this.events.off(event, listener);
    return this;
  }

  private close(reset: boolean): void {
    if (this.writableEnded || this.destroyed) return;
    if (reset) this.destroyed = true;
    else this.writableEnded = true;
    if (this.res.writableEnded || this.res.destroyed) return;
    const tail = this.decoder.end();
    if (tail !== '') this.res.write(frame('text', { id: this.id, text: tail }));
    this.res.write(frame('closed', { id: this.id, reset }));
  }
}

/** One run's telemetry subscription on a page stream; its `end()` ends only this run's part. */
class TelemetrySlot implements TelemetryTarget {
  private done = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly events: EventEmitter,
    private readonly onEnd: () => void,
  ) {}

  get writableLength(): number {
    return this.res.writableLength;
  }

  /** The page stream committed its headers already. */
  writeHead(_statusCode: number, _headers: OutgoingHttpHeaders): void {}

  write(chunk: Buffer): boolean {
    if (this.res.writableEnded || this.res.destroyed) return false;
    return this.res.write(chunk);
  }

  end(chunk?: Buffer): void {
    if (this.done) return;
    this.done = true;
    if (chunk !== undefined) this.write(chunk);
    this.onEnd();
  }

  /** A page that has not drained for the hub's `stallTimeoutMs` loses its whole stream. */
  destroy(): void {
    this.res.destroy();
  }

  on(event: 'close' | 'drain', listener: () => void): this {
    this.events.on(event, listener);
    return this;
  }

  once(event: 'close', listener: () => void): this {
    this.events.once(event, listener);
    return this;
  }

  off(event: 'close' | 'drain', listener: () => void): this {
    this.events.off(event, listener);
    return this;
  }
}
