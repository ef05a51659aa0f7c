import { SseBodyError, SseHttpError, SseLimitError, TimeoutError } from '../errors';
import { addDemand } from '../flow/demand';
import { reportDropped } from '../flow/discard';
import type { Subscriber, Subscription } from '../flow/types';
import type { SseEvent } from '../sse/codec/parser';
import { sseDecode } from '../sse/operators/sse-decode';
import { UpstreamEncodingError, UpstreamRedirectError, UpstreamUpgradeError } from '../http/errors';
import { isMediaType } from '../http/media-type';
import { retryAfterMs as parseRetryAfter } from '../http/retry';
import { SocketDeadline } from '../http/socket-deadline';
import { tapBytes, type BodyTap } from './body-tap';
import type { ResolvedSseOptions, SseResponseInfo } from './options';
import { endedError, Reconnection } from './reconnect';
import type { SseAnswer } from './transport';

/** The longest delay `setTimeout` honours (2^31-1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How long a response may stay open after its terminal event before it is aborted, ms (as the gateway's `adaptProvider`). */
const DRAIN_AFTER_TERMINAL_MS = 1000;

type State = 'connecting' | 'streaming' | 'waiting' | 'done';

/**
 * @internal One logical SSE stream across reconnects: the downstream subscription (demand is
 * summed here and re-requested from each new connection, as Reactor's
 * `MultiSubscriptionSubscriber`), the current connection, and its timers.
 *
 * The downstream may attach after `start()` (see `openSse`); until then demand is 0, so nothing
 * is read, and a terminal signal is kept for the attach.
 */
export class SseSession implements Subscription {
  private actual: Subscriber<SseEvent> | undefined;
  private pendingTerminal: { error: unknown; failed: boolean } | undefined;
  private demand = 0;
  private state: State = 'connecting';
  private generation = 0;
  private controller: AbortController | undefined;
  private inner: Subscription | undefined;
  private tap: BodyTap | undefined;
  /** The bytes the current connection's parser holds (`undefined`: no connection streams). */
  private parserHeld: (() => number) | undefined;
  private backoffTimer: NodeJS.Timeout | undefined;
  private idleTimer: SocketDeadline | undefined;
  /** This attempt's error body is being read by a `text()` that times its silence (see {@link SseAnswer.textTimesSilence}). */
  private readingErrorBody = false;
  private lastEventId: string;
  private readonly reconnection: Reconnection;
  private connections = 0;
  /** Requests started (`onConnecting`'s count). */
  private requests = 0;
  private readonly onAbort = (): void => this.finish(true, this.options.signal?.reason);
  /** The failure a reconnect wait follows (undefined: an EOF), for `stopReconnects`. */
  private waitingAfter: unknown;
  private readonly onStop = (): void => {
    if (this.state === 'waiting') this.finish(true, this.reconnection.stoppedError(this.waitingAfter));
  };

  /** Called once when the session ends, after the downstream was signalled (or the signal was kept). */
  onTerminate: ((failed: boolean, error: unknown) => void) | undefined;
  /** Called for the first response that opened (or a 204). */
  onFirstOpen: ((response: SseResponseInfo) => void) | undefined;

  constructor(private readonly options: ResolvedSseOptions) {
    this.lastEventId = options.lastEventId;
    this.reconnection = new Reconnection(options);
  }

  get terminated(): boolean {
    return this.state === 'done';
  }

  /** Attaches the downstream; a second attach is refused with an error. */
  attach(actual: Subscriber<SseEvent>): void {
    if (this.actual !== undefined) {
      actual.onSubscribe({ request() {}, cancel() {} });
      actual.onError(new Error('this SSE stream accepts one subscriber; call connectSse again for another'));
      return;
    }
    this.actual = actual;
    this.options.attachHeld?.(() => this.parserHeld?.() ?? 0);
    actual.onSubscribe(this);
    const terminal = this.pendingTerminal;
    if (terminal !== undefined) {
      this.pendingTerminal = undefined;
      if (terminal.failed) actual.onError(terminal.error);
      else actual.onComplete();
    }
  }

  start(): void {
    if (this.state === 'done') return;
    const signal = this.options.signal;
    if (signal?.aborted) {
      this.finish(true, signal.reason);
      return;
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });
    this.options.stopReconnects?.addEventListener('abort', this.onStop, { once: true });
    this.connect();
  }

  request(n: number): void {
    if (this.state === 'done') return;
    this.demand = addDemand(this.demand, n);
    this.inner?.request(n);
    this.updateIdle();
  }

  cancel(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.release();
  }

  private connect(): void {
    const onConnecting = this.options.onConnecting;
    if (onConnecting !== undefined) {
      try {
        onConnecting({ request: ++this.requests, lastEventId: this.lastEventId });
      } catch (err) {
        reportDropped(err);
      }
      if (this.state === 'done') return; // the hook aborted the signal
    }
    const gen = ++this.generation;
    this.state = 'connecting';
    this.readingErrorBody = false;
    // A dropped connection's partial event is discarded (§9.2.6): no longer held.
    this.parserHeld = undefined;
    const controller = new AbortController();
    this.controller = controller;
    this.clearIdle();
    this.updateIdle();
    let pending: Promise<SseAnswer>;
    try {
      pending = this.options.transport(this.reconnection.request(this.lastEventId), controller.signal);
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (answer) => {
        if (gen !== this.generation) answer.release();
        else this.onResponse(gen, answer);
      },
      (err: unknown) => {
        if (gen !== this.generation) return;
        // The upstream answered, with a redirect loop, one off its origin, a switch of
        // protocols or a body in a coding not decoded: asking again changes nothing.
        if (err instanceof UpstreamRedirectError || err instanceof UpstreamUpgradeError || err instanceof UpstreamEncodingError) this.finish(true, err);
        else this.onConnectionFailure(err);
      },
    );
  }

  private onResponse(gen: number, response: SseAnswer): void {
    const { status } = response;
    const contentType = response.headers.get('content-type') ?? undefined;
    if (status === 204) {
      response.release();
      this.notifyOpen(response);
      this.finish(false, undefined); // WHATWG §9.2.3: 204 No Content stops reconnection
      return;
    }
    const isStream = isMediaType(contentType, 'text/event-stream');
    // §9.2.3: only a 200 with `text/event-stream` announces the connection; any other status
    // fails it (204 above stops). 429 and 5xx are retried below: a deliberate deviation.
    if (status === 200 && isStream) {
      this.openStream(gen, response);
      return;
    }
    const retryable = status === 429 || (status >= 500 && status < 600);
    const retryAfter = retryable ? parseRetryAfter(response.headers.get('retry-after')) : undefined;
    const allow = status === 405 ? (response.headers.get('allow') ?? undefined) : undefined;
    if (response.textTimesSilence === true) {
      // The answer came: from here text() times the error body's silence itself.
      this.readingErrorBody = true;
      this.clearIdle();
    }
    void response.text(this.options.maxErrorBodyBytes).then((text) => this.onErrorResponse(gen, new SseHttpError(status, text, contentType, retryAfter, allow), retryable));
  }

  private onErrorResponse(gen: number, error: SseHttpError, retryable: boolean): void {
    if (gen !== this.generation) return;
    if (retryable) this.onConnectionFailure(error, error.retryAfterMs);
    else this.finish(true, error);
  }

  private openStream(gen: number, response: SseAnswer): void {
    this.state = 'streaming';
    this.notifyOpen(response);
    if (gen !== this.generation || this.state !== 'streaming') {
      response.release();
      return;
    }
    const seed = this.lastEventId;
    const tap: BodyTap = { body: undefined, ended: false, drainEnded: undefined };
    this.tap = tap;
    const bytes = tapBytes(response.body(), () => this.touch(gen), tap);
    const events = bytes.pipe(
      sseDecode({
        maxLineBytes: this.options.maxLineBytes,
        maxEventBytes: this.options.maxEventBytes,
        // The new connection's events carry the resumed ID until the server sends another, as
        // browsers' EventSource keeps its last event ID string across reconnects.
        lastEventId: seed,
        attachHeld: (held) => {
          if (gen === this.generation) this.parserHeld = held;
        },
        // Like the events: nothing of a connection reaches the user once it was released
        // (a reconnect, the terminal event, a cancel), even from the rest of a chunk in hand.
        onRetry: (ms) => {
          if (gen === this.generation) this.reconnection.onRetry(ms);
        },
        onComment:
          this.options.onComment === undefined
            ? undefined
            : (comment) => {
                if (gen === this.generation) this.options.onComment?.(comment);
              },
        // An `id:`-only block moves the resume point too (§9.2.6 dispatch step 1).
        onLastEventId: (id) => {
          if (gen === this.generation) this.lastEventId = id;
        },
      }),
    );
    events.subscribeWith({
      onSubscribe: (s) => {
        if (gen !== this.generation) {
          s.cancel();
          return;
        }
        this.inner = s;
        if (this.demand > 0) s.request(this.demand);
      },
      onNext: (event) => this.onEvent(gen, event),
      onError: (err) => {
        if (gen !== this.generation) return;
        if (err instanceof SseLimitError || err instanceof SseBodyError) this.finish(true, err);
        else this.onConnectionFailure(err);
      },
      onComplete: () => {
        if (gen !== this.generation) return;
        if (this.options.reconnect) this.onConnectionFailure(undefined);
        else this.finish(false, undefined);
      },
    });
    this.updateIdle();
  }

  private onEvent(gen: number, event: SseEvent): void {
    if (gen !== this.generation || this.state === 'done') return;
    if (this.demand !== Infinity) this.demand--;
    this.lastEventId = event.lastEventId;
    this.reconnection.onEvent();
    let terminal = false;
    if (this.options.isTerminal !== undefined) {
      try {
        terminal = this.options.isTerminal(event);
      } catch (err) {
        this.finish(true, err);
        return;
      }
    }
    this.actual?.onNext(event);
    if ((this.state as State) === 'done') return; // the subscriber cancelled in onNext
    if (terminal) this.finish(false, undefined, true);
    else this.updateIdle();
  }

  private touch(gen: number): void {
    if (gen === this.generation) this.idleTimer?.refresh();
  }

  /** A connection failed (network error, EOF when `error` is undefined, idle, retryable status): reconnect or fail. */
  private onConnectionFailure(error: unknown, retryAfterMs?: number): void {
    if (this.state === 'done') return;
    this.closeConnection();
    const step = this.reconnection.onFailure(error, retryAfterMs);
    // The reconnect filter may have aborted the signal (narrowing does not see it change state).
    if ((this.state as State) === 'done') return;
    if (!step.retry) {
      this.finish(true, step.error);
      return;
    }
    const { attempt, delayMs } = step;
    this.state = 'waiting';
    this.waitingAfter = error;
    const reason = error ?? endedError(attempt);
    try {
      this.options.onReconnect?.({ attempt, delayMs, error: reason, lastEventId: this.lastEventId });
    } catch (err) {
      reportDropped(err);
    }
    if (this.state !== 'waiting') return; // the hook cancelled
    // setTimeout fires at once for a delay above 2^31-1 ms (a huge Retry-After): clamp it.
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      if (this.state === 'waiting') this.connect();
    }, Math.min(delayMs, MAX_TIMER_MS));
  }

  private notifyOpen(response: SseAnswer): void {
    const info: SseResponseInfo = { status: response.status, headers: response.headers, connection: ++this.connections };
    this.reconnection.onOpen(response.headers);
    const first = this.onFirstOpen;
    this.onFirstOpen = undefined;
    try {
      this.options.onOpen?.(info);
      first?.(info);
    } catch (err) {
      reportDropped(err);
    }
  }

  /** Arms the idle timer while bytes are expected: waiting for headers, or streaming with demand. */
  private updateIdle(): void {
    const ms = this.options.idleTimeoutMs;
    if (ms === undefined) return;
    const expecting = (this.state === 'connecting' && this.options.idleBeforeAnswer && !this.readingErrorBody) || (this.state === 'streaming' && this.demand > 0);
    if (!expecting) {
      this.clearIdle();
      return;
    }
    if (this.idleTimer !== undefined) return;
    // closeConnection() and connect() clear the timer, so it always belongs to the current
    // connection. Its verdict waits for the next poll (SocketDeadline): bytes already in the
    // socket when a blocked loop runs it late move it instead.
    this.idleTimer = new SocketDeadline(ms, () => {
      this.idleTimer = undefined;
      if (this.state === 'connecting' || this.state === 'streaming') {
        this.onConnectionFailure(new TimeoutError('idle', ms));
      }
    });
  }

  private clearIdle(): void {
    if (this.idleTimer !== undefined) {
      this.idleTimer.clear();
      this.idleTimer = undefined;
    }
  }

  /** Takes the current connection's handles: later signals from it are ignored. */
  private detachConnection(): { inner: Subscription | undefined; controller: AbortController | undefined; tap: BodyTap | undefined } {
    this.generation++;
    this.readingErrorBody = false;
    this.clearIdle();
    const taken = { inner: this.inner, controller: this.controller, tap: this.tap };
    this.inner = undefined;
    this.controller = undefined;
    this.tap = undefined;
    return taken;
  }

  /** Releases the current connection (abort): later signals from it are ignored. */
  private closeConnection(): void {
    const { inner, controller, tap } = this.detachConnection();
    inner?.cancel();
    tap?.body?.cancel();
    controller?.abort();
  }

  /**
   * Lets the current response end on its own after a terminal event, so its keep-alive socket is
   * reused: the body is read to its end below the decoder and dropped (later signals of the
   * connection are ignored, as after {@link closeConnection}); aborted if still open after
   * {@link DRAIN_AFTER_TERMINAL_MS}.
   */
  private drainConnection(): void {
    const tap = this.tap;
    const body = tap?.body;
    if (tap === undefined || body === undefined) {
      this.closeConnection();
      return;
    }
    const { inner, controller } = this.detachConnection();
    if (tap.ended) {
      // The body already ended (its last events were still queued in the decoder): nothing to read.
      inner?.cancel();
      return;
    }
    const timer = setTimeout(() => {
      tap.drainEnded = noop;
      inner?.cancel();
      body.cancel();
      controller?.abort();
    }, DRAIN_AFTER_TERMINAL_MS);
    timer.unref();
    // EOF or an error: the socket is back in the pool, or already gone; nothing to abort.
    tap.drainEnded = () => {
      tap.drainEnded = noop;
      clearTimeout(timer);
    };
    body.request(Infinity); // may end the drain at once (chunks parked before a pending end)
  }

  private release(drain = false): void {
    this.parserHeld = undefined;
    if (drain) this.drainConnection();
    else this.closeConnection();
    if (this.backoffTimer !== undefined) {
      clearTimeout(this.backoffTimer);
      this.backoffTimer = undefined;
    }
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.options.stopReconnects?.removeEventListener('abort', this.onStop);
  }

  /** Ends the session; `drain`: after a terminal event, let the response end on its own (see {@link drainConnection}). */
  private finish(failed: boolean, error: unknown, drain = false): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.release(drain);
    const actual = this.actual;
    if (actual === undefined) this.pendingTerminal = { failed, error };
    else if (failed) actual.onError(error);
    else actual.onComplete();
    this.onTerminate?.(failed, error);
  }
}


const noop = (): void => undefined;
