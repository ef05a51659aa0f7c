import { addDemand } from '../../flow/demand';
import { Flow } from '../../flow/flow';
import type { Subscriber, Subscription } from '../../flow/types';
import type { BridgeElement } from '../../express/send-flow';
import { encodeSseBuffer } from '../../sse';
import { encodeWithId, isEvent } from './encode-event';
import { ResumeGapError, ResumeRequestError } from './errors';
import { eventId } from './ids';
import { ReplayWindow } from './window';

/** How a shared stream ended: its upstream completed or failed, or it was cancelled (no reader came back, or it was aborted). */
export type ReplayTerminal = { readonly kind: 'complete' } | { readonly kind: 'error'; readonly error: unknown } | { readonly kind: 'cancelled'; readonly reason?: unknown };

/** Options of a {@link ReplayStream}. Bytes and ms. */
export interface ReplayStreamOptions {
  /** Written into every event's `id:` as `<streamId>:<seq>`. */
  streamId: string;
  /**
   * Bytes of history kept for late and returning readers (events every reader already took),
   * and, apart from it, how far the producer may run ahead of its slowest attached reader or,
   * detached, of the last event a reader took: a stream holds at most 2 × `windowBytes` plus
   * one event.
   */
  windowBytes: number;
  /** With no attached reader, the upstream is kept this long, then cancelled, ms. */
  lingerMs: number;
  /**
   * True for a provider keep-alive event (Anthropic's `ping`, which SDKs drop): it gets no `id:`,
   * no seq and no log entry, so the events an SDK yields count the seqs. Every caught-up reader
   * with demand gets it at once, counted against its demand (its socket paces a ping flood as it
   * paces events). When none takes it, only the latest waiting one is kept, to go out just before
   * the next numbered event (in the same log entry), and the bytes of those not taken count as
   * read-ahead: after `windowBytes` of them the producer requests nothing until a reader takes one.
   */
  isKeepAlive?: ((event: { readonly event?: string | undefined }) => boolean) | undefined;
  /** Called with each event as it enters the log (a store mirrors it), and the window's first seq after trimming. */
  onAppend?: ((seq: number, bytes: Buffer, firstSeq: number) => void) | undefined;
  /** Called once when the stream ends, however it ends. */
  onEnd?: ((terminal: ReplayTerminal) => void) | undefined;
  /** Called when the count of attached readers changes. */
  onReaders?: ((attached: number) => void) | undefined;
  /**
   * Asked before each request upstream, with the size of the last event logged (an estimate of
   * the next): `false` means the shared store has no room, and nothing is requested until
   * {@link ReplayStream.poke}. Absent: always room.
   */
  hasRoom?: ((nextBytes: number) => boolean) | undefined;
  /**
   * Asked with each arriving event's size before it is logged: `false` means it cannot fit, and
   * the stream ends with `storeFull()` (the event is dropped, the log kept). Absent: it fits.
   */
  admit?: ((bytes: number) => boolean) | undefined;
  /** The error a stream ends with when {@link admit} refused an event. */
  storeFull?: (() => unknown) | undefined;
}

/**
 * One upstream shared by the clients reading it, with a bounded history: Reactor's
 * `Flux#replay(history).refCount(1, gracePeriod)`, with the history counted in encoded bytes
 * (`windowBytes`) and the grace period `lingerMs`.
 *
 * Each event gets the SSE id `<streamId>:<seq>` (seq from 1), is encoded once, kept in the
 * {@link ReplayWindow} and handed to every reader ({@link reader}) when that reader asks for it.
 * A reader that subscribes after others replays the window from the event after the one it has,
 * then follows live.
 *
 * Demand: with every attached reader caught up, the producer requests upstream exactly what the
 * most demanding reader asked beyond the events already logged or requested, so one reader's
 * socket drives the model as without resume. While some reader lags, one event at a time, and
 * none once that reader has `windowBytes` unread: the slowest attached reader bounds how far
 * the producer runs ahead. With no attached reader (detached), one event at a time while the
 * bytes after the last event any reader took stay under `windowBytes`, then none (the upstream
 * is paused and TCP pushes back on the model); and after `lingerMs` without a reader, `cancel()`.
 * In every state, nothing while the shared store has no room ({@link ReplayStreamOptions.hasRoom}).
 * A keep-alive takes a unit of demand from each reader it is handed to; those nobody takes count
 * as read-ahead bytes (see {@link ReplayStreamOptions.isKeepAlive}).
 *
 * Discard: the window keeps `windowBytes` of history (the events before the oldest one some
 * reader still needs: every attached reader's next, or, detached, the one after the last taken)
 * apart from the read-ahead after it (at most `windowBytes` plus one event), so the events a
 * client had in flight when it dropped stay in the history while they are within `windowBytes`
 * of the last event taken; on cancel or {@link release} it is dropped. Of the keep-alives no
 * reader took, only the latest is held (one event), until the next numbered event.
 */
export class ReplayStream implements Subscriber<BridgeElement> {
  readonly window = new ReplayWindow();
  /** Resolves with how the stream ended. */
  readonly done: Promise<ReplayTerminal>;
  private resolveDone!: (t: ReplayTerminal) => void;
  private upstream: Subscription | undefined;
  private connected = false;
  private inflight = 0;
  private terminal: ReplayTerminal | undefined;
  private readonly readers = new Set<ReplayReader>();
  /** The last seq any reader took. */
  private taken = 0;
  private lingerTimer: NodeJS.Timeout | undefined;
  private pulling = false;
  private pullAgain = false;
  /** Set on shutdown: a stream whose last reader leaves is cancelled at once. */
  private noLinger = false;
  /** The latest encoded keep-alive no reader took, waiting for the next numbered event. */
  private keepAlive: Buffer | undefined;
  /** Bytes of the keep-alives no reader took since the last numbered event or taken one. */
  private keepAliveBytes = 0;
  /** The last seq a reader on another instance has (shared store), `undefined` when none follows. */
  private remote: number | undefined;
  /** Bytes of the last event logged: the room asked for the next one. */
  private lastEventBytes = 0;

  /** The upstream's events until the first reader connects them; dropped then, and at the end. */
  private source: Flow<BridgeElement> | undefined;

  constructor(
    source: Flow<BridgeElement>,
    private readonly options: ReplayStreamOptions,
  ) {
    this.source = source;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** How the stream ended, `undefined` while it runs. */
  get ended(): ReplayTerminal | undefined {
    return this.terminal;
  }

  /** Readers attached now. */
  get attached(): number {
    return this.readers.size;
  }

  /** True while no reader is attached and the upstream is still held (lingering). */
  get detached(): boolean {
    return this.terminal === undefined && this.connected && this.readers.size === 0 && this.remote === undefined;
  }

  /**
   * The slowest of the readers on other instances, which follow from the shared store, has every
   * event up to `seq` (`undefined`: none follows any more). It counts as an attached reader that
   * always asks: the producer runs up to `windowBytes` ahead of it, and the linger waits while it
   * follows. Keep-alives are not in the shared store, so such a reader never takes one: each
   * report that it has every event counts as taking the keep-alives nobody took, one
   * `windowBytes` of them per report at most (without it, a stream silent but for pings would
   * stop for good once `windowBytes` of them waited).
   */
  follow(seq: number | undefined): void {
    if (this.terminal !== undefined) return;
    const remote = seq === undefined ? undefined : Math.min(seq, this.window.lastSeq);
    if (remote !== undefined && remote >= this.window.lastSeq && this.keepAliveBytes > 0) {
      this.keepAliveBytes = 0;
      if (remote === this.remote) return this.pull();
    }
    if (seq === this.remote) return;
    const had = this.remote !== undefined;
    this.remote = remote;
    if (this.remote !== undefined) this.stopLinger();
    else if (had && this.readers.size === 0) this.startLinger();
    this.pull();
  }

  /** Requests upstream not yet answered. */
  get inflightRequests(): number {
    return this.inflight;
  }

  /**
   * The events after `afterSeq`, then the live ones, as encoded bytes, ending as the upstream
   * ended. The first reader connects the upstream (Reactor's `refCount(1)`).
   *
   * @throws {ResumeGapError} when events after `afterSeq` already left the window.
   * @throws {ResumeRequestError} when `afterSeq` is past the last event.
   */
  reader(afterSeq = 0): Flow<Buffer> {
    if (afterSeq > this.window.lastSeq) throw new ResumeRequestError(`event ${afterSeq} was never sent (the last is ${this.window.lastSeq})`);
    if (afterSeq + 1 < this.window.firstSeq) throw new ResumeGapError(afterSeq, this.window.firstSeq);
    if (this.terminal?.kind === 'cancelled') throw new ResumeGapError(afterSeq, this.window.lastSeq + 1);
    return new Flow<Buffer>((actual) => {
      const r = new ReplayReader(this, actual, afterSeq + 1);
      // A reader that came after the window moved on (between the check and the subscription) is refused.
      if (afterSeq + 1 < this.window.firstSeq) {
        actual.onSubscribe(r);
        actual.onError(new ResumeGapError(afterSeq, this.window.firstSeq));
        return;
      }
      this.readers.add(r);
      this.stopLinger();
      this.options.onReaders?.(this.readers.size);
      actual.onSubscribe(r);
      if (!this.connected) {
        this.connected = true;
        const source = this.source;
        this.source = undefined;
        // An ended stream (aborted before any reader came) connects nothing.
        if (source !== undefined && this.terminal === undefined) source.subscribeWith(this);
      }
      this.deliver(r);
    });
  }

  /** Ends the stream from the gateway's side: the upstream is cancelled and readers get `reason`. */
  abort(reason: unknown): void {
    if (this.terminal !== undefined) return;
    this.upstream?.cancel();
    this.end({ kind: 'error', error: reason });
  }

  /**
   * Ends a stream no reader ever subscribed to (its first client's response failed before it
   * read): nothing connected the upstream, and nothing else would end it.
   */
  cancelIfUnread(): void {
    if (!this.connected && this.terminal === undefined) this.end({ kind: 'cancelled' });
  }

  /**
   * Ends the linger (shutdown): cancels the upstream at once when the stream is detached (no
   * reader here or on another instance), and from now on as soon as its last reader leaves,
   * without waiting for `lingerMs`. Returns whether it cancelled now.
   */
  cancelIfDetached(): boolean {
    this.noLinger = true;
    if (!this.detached) return false;
    this.cancelUpstream();
    return true;
  }

  /** Drops the log (the store evicted it or its retention ended). */
  release(): void {
    this.window.clear();
  }

  /**
   * Drops the whole history (the events every reader already took), keeping the events some
   * reader still needs; the store's last resort before a log cannot grow. Returns the bytes freed.
   */
  shedHistory(): number {
    const before = this.window.bytes;
    if (this.terminal === undefined) this.window.trim(0, this.floor());
    return before - this.window.bytes;
  }

  /** Asks again what to request upstream (the store has room again). */
  poke(): void {
    this.pull();
  }

  // ---- upstream side ------------------------------------------------------------------

  onSubscribe(s: Subscription): void {
    if (this.terminal !== undefined) return s.cancel();
    this.upstream = s;
    this.pull();
  }

  onNext(element: BridgeElement): void {
    if (this.terminal !== undefined) return;
    this.inflight = Math.max(0, this.inflight - 1);
    const seq = this.window.lastSeq + 1;
    let bytes: Buffer;
    try {
      if (isEvent(element) && this.options.isKeepAlive?.(element) === true) return this.keepAliveArrived(encodeSseBuffer(element));
      bytes = encodeWithId(element, eventId(this.options.streamId, seq));
      if (this.keepAlive !== undefined) bytes = Buffer.concat([this.keepAlive, bytes]);
      this.keepAlive = undefined;
      this.keepAliveBytes = 0;
    } catch (err) {
      // encodeSse refuses an event field with CR or LF (injection): the stream ends with it.
      return this.abort(err);
    }
    if (this.options.admit !== undefined && !this.options.admit(bytes.length)) return this.abort(this.options.storeFull?.());
    this.lastEventBytes = bytes.length;
    this.window.append(bytes);
    this.window.trim(this.options.windowBytes, this.floor());
    this.options.onAppend?.(seq, bytes, this.window.firstSeq);
    for (const r of [...this.readers]) this.deliver(r);
    this.pull();
  }

  onError(error: unknown): void {
    this.end({ kind: 'error', error });
  }

  onComplete(): void {
    this.end({ kind: 'complete' });
  }

  /** A keep-alive came: see {@link ReplayStreamOptions.isKeepAlive}. */
  private keepAliveArrived(ping: Buffer): void {
    let taken = false;
    for (const r of [...this.readers]) {
      if (!this.takesKeepAlive(r)) continue;
      if (r.demand !== Infinity) r.demand--;
      taken = true;
      r.actual.onNext(ping);
    }
    if (taken) this.keepAliveBytes = 0;
    else {
      // One waiting ping says what many would: keeping the latest keeps the cost linear.
      this.keepAlive = ping;
      this.keepAliveBytes += ping.length;
    }
    this.pull();
  }

  /** Whether `r` takes a keep-alive now: caught up, asking, and not inside its own delivery. */
  private takesKeepAlive(r: ReplayReader): boolean {
    return !r.gone && !r.emitting && r.demand > 0 && r.next > this.window.lastSeq;
  }

  // ---- readers ------------------------------------------------------------------------

  /** @internal A reader asked for more. */
  requested(r: ReplayReader): void {
    this.deliver(r);
    this.pull();
  }

  /** @internal A reader left: detached, it no longer bounds the producer. */
  left(r: ReplayReader): void {
    if (!this.readers.delete(r)) return;
    this.options.onReaders?.(this.readers.size);
    if (this.readers.size === 0 && this.remote === undefined && this.terminal === undefined) this.startLinger();
    this.pull();
  }

  /** Hands `r` what it asked for from the window, then the end once it has every event. */
  private deliver(r: ReplayReader): void {
    if (r.emitting) {
      r.missed = true;
      return;
    }
    r.emitting = true;
    do {
      r.missed = false;
      while (r.demand > 0 && r.next <= this.window.lastSeq && !r.gone) {
        const bytes = this.window.get(r.next);
        if (bytes === undefined) {
          r.fail(new ResumeGapError(r.next - 1, this.window.firstSeq));
          break;
        }
        r.next++;
        if (r.demand !== Infinity) r.demand--;
        if (r.next - 1 > this.taken) this.taken = r.next - 1;
        r.actual.onNext(bytes);
      }
      if (!r.gone && this.terminal !== undefined && r.next > this.window.lastSeq) r.finish(this.terminal);
    } while (r.missed && !r.gone);
    r.emitting = false;
  }

  /** The oldest event some reader still needs: every attached reader's next, or past the last taken one when none is attached. */
  private floor(): number {
    let floor = this.readers.size === 0 && this.remote === undefined ? this.taken + 1 : Infinity;
    for (const r of this.readers) floor = Math.min(floor, r.next);
    if (this.remote !== undefined) floor = Math.min(floor, this.remote + 1);
    return floor;
  }

  /** Requests upstream what the readers' demand and the window allow (see the class comment). */
  private pull(): void {
    if (this.pulling) {
      this.pullAgain = true;
      return;
    }
    this.pulling = true;
    try {
      do {
        this.pullAgain = false;
        if (this.terminal !== undefined || this.upstream === undefined) return;
        const n = this.wanted();
        if (n <= 0) continue;
        if (this.options.hasRoom !== undefined && !this.options.hasRoom(this.lastEventBytes)) continue;
        this.inflight = addDemand(this.inflight, n);
        this.upstream.request(n);
      } while (this.pullAgain);
    } finally {
      this.pulling = false;
    }
  }

  /** How many events to request upstream now (0: none). */
  private wanted(): number {
    const ahead = this.window.lastSeq + this.inflight;
    if (this.readers.size === 0 && this.remote === undefined) {
      // Detached: one at a time while the bytes after the last one taken stay under the window.
      return this.inflight > 0 || this.window.bytesAfter(this.taken) + this.keepAliveBytes >= this.options.windowBytes ? 0 : 1;
    }
    // Keep-alives nobody takes are read-ahead too: a ping flood waits for a reader to take one.
    if (this.keepAliveBytes >= this.options.windowBytes && ![...this.readers].some((r) => this.takesKeepAlive(r))) return 0;
    let most = this.remote === undefined ? 0 : Infinity;
    let least = Infinity;
    let lag = this.remote === undefined ? 0 : this.window.bytesAfter(this.remote);
    for (const r of this.readers) {
      const want = r.demand === Infinity ? Infinity : r.next - 1 + r.demand;
      most = Math.max(most, want);
      least = Math.min(least, want);
      lag = Math.max(lag, this.window.bytesAfter(r.next - 1));
    }
    // What every local reader asked for leaves the log as it comes: requested at once.
    if (this.readers.size > 0 && least > ahead) return least === Infinity ? Infinity : least - ahead;
    // Beyond it some reader lags: one at a time, none once it has windowBytes unread.
    if (most > ahead && this.inflight === 0 && lag < this.options.windowBytes) return 1;
    return 0;
  }

  private startLinger(): void {
    this.stopLinger();
    if (this.options.lingerMs <= 0 || this.noLinger) return this.cancelUpstream();
    this.lingerTimer = setTimeout(() => this.cancelUpstream(), this.options.lingerMs);
  }

  private stopLinger(): void {
    if (this.lingerTimer !== undefined) clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
  }

  /** No reader came back in time: Reactor's `refCount` grace period is over. */
  private cancelUpstream(): void {
    if (this.terminal !== undefined || this.readers.size > 0 || this.remote !== undefined) return;
    this.upstream?.cancel();
    this.end({ kind: 'cancelled' });
  }

  private end(t: ReplayTerminal): void {
    if (this.terminal !== undefined) return;
    this.terminal = t;
    this.inflight = 0;
    this.stopLinger();
    // An ended stream is kept for its log alone (`retentionMs`): the upstream's chain, which
    // reaches the first client's bridge, response and sockets, is no longer needed.
    this.upstream = undefined;
    this.source = undefined;
    if (t.kind === 'cancelled') this.window.clear();
    else this.window.compact();
    for (const r of [...this.readers]) this.deliver(r);
    this.options.onEnd?.(t);
    this.resolveDone(t);
  }
}

/** One reader of a {@link ReplayStream}: its own demand and position. */
class ReplayReader implements Subscription {
  demand = 0;
  gone = false;
  emitting = false;
  missed = false;

  constructor(
    private readonly stream: ReplayStream,
    readonly actual: Subscriber<Buffer>,
    /** Seq of the next event it gets. */
    public next: number,
  ) {}

  request(n: number): void {
    if (this.gone) return;
    if (!(n > 0)) return this.fail(new RangeError(`request(${n}): n must be positive (Reactive Streams rule 3.9)`));
    this.demand = addDemand(this.demand, n);
    this.stream.requested(this);
  }

  cancel(): void {
    if (this.gone) return;
    this.gone = true;
    this.stream.left(this);
  }

  fail(error: unknown): void {
    if (this.gone) return;
    this.gone = true;
    this.stream.left(this);
    this.actual.onError(error);
  }

  finish(t: ReplayTerminal): void {
    if (this.gone) return;
    this.gone = true;
    this.stream.left(this);
    if (t.kind === 'complete') this.actual.onComplete();
    else this.actual.onError(t.kind === 'error' ? t.error : t.reason);
  }
}
