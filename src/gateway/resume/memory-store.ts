import type { Flow } from '../../flow/flow';
import type { BridgeElement } from '../../express/send-flow';
import { ResumeStoreFullError } from './errors';
import { ReplayStream, type ReplayStreamOptions } from './replay-stream';
import { ALIAS_SCAN_EVENTS, type DetachedStreamSnapshot, type LogSnapshot, type OpenOptions, type ResumeStore, type StoredStream, type StreamMeta } from './store';

/** Longest alias kept (a provider's response id is far shorter). */
const MAX_ALIAS_CHARS = 256;
/** How often streams waiting for room ask again, ms (a reader taking events frees history without a drop). */
const ROOM_RETRY_MS = 50;
/**
 * Room set aside for a requested event: twice the stream's last event, at least this. Events
 * vary in size; an event larger than its room can still fit in the room no one set aside.
 */
const MIN_RESERVE_BYTES = 4096;
/**
 * Share of `maxBytes` streams with no reader may fill with read-ahead: the rest stays for the
 * streams clients read now, so detached streams cannot starve them.
 */
const DETACHED_SHARE = 0.5;
/**
 * What a finished stream held for `retentionMs` takes beside its log's bytes, counted in the
 * store's total: its `ReplayStream` and window, the store's entry, hooks and expiry timer (about
 * 2.5 KB in a heap snapshot), rounded up. Without it a flood of short streams would keep their
 * objects for `retentionMs` outside `maxBytes`.
 */
export const FINISHED_STREAM_BYTES = 4096;

/** One stream held by the {@link MemoryResumeStore}. */
interface Held {
  readonly meta: StreamMeta;
  readonly stream: ReplayStream;
  /** Bytes of its log counted in the store's total, and {@link FINISHED_STREAM_BYTES} once it finished. */
  counted: number;
  /** Bytes set aside for the event it requested (its last event's size), until that event arrives. */
  reserved: number;
  expiry?: NodeJS.Timeout | undefined;
  /** Its alias ({@link OpenOptions.aliasOf}), once an event named one. */
  alias?: string | undefined;
}

/**
 * The streams an alias named. An upstream that gives one id to two streams (a server with fixed
 * or counter ids) makes the alias name neither: a client asking by it could be reading another
 * client's stream. It stays that way until every stream that named it is dropped.
 */
interface AliasEntry {
  /** The one stream it names; `undefined` once two streams named it. */
  streamId: string | undefined;
  /** Held streams that named it. */
  holders: number;
}

/** Options of a {@link MemoryResumeStore}. */
export interface MemoryStoreOptions {
  /**
   * Bytes every log together may hold, each finished stream counted with
   * {@link FINISHED_STREAM_BYTES} for its objects, never exceeded: to fit an event, or a stream
   * that just finished, finished streams are dropped oldest first, then (for an event) running
   * streams' history; a stream whose next event would not fit requests nothing upstream until
   * there is room.
   */
  maxBytes: number;
  /** Called when a second held stream names an alias (see {@link MemoryResumeStore.resolve}). */
  onAliasReused?: ((alias: string) => void) | undefined;
  /** Extra hooks for each stream opened (a shared store mirrors its events). */
  hooks?: ((meta: StreamMeta) => Pick<ReplayStreamOptions, 'onAppend' | 'onEnd'> & { onAlias?: ((alias: string) => void) | undefined }) | undefined;
}

/**
 * The embedded store: each stream's {@link ReplayStream} and its window in this process. A
 * stream is kept while it runs and for `retentionMs` after it ended; one cancelled (no reader
 * came back within `lingerMs`) is dropped at once.
 *
 * Bounded: each log by its `windowBytes`; all together, with {@link FINISHED_STREAM_BYTES} for
 * each finished stream, by `maxBytes`, which the total never exceeds. A finished stream keeps
 * its log alone (see `ReplayStream`), in one buffer of its size. Demand: a stream asks the store before each request upstream; with no room it requests
 * nothing (its upstream pauses, TCP pushes back) and asks again as logs are dropped or every
 * {@link ROOM_RETRY_MS}. Room is made, in order, by dropping finished logs (oldest first), then the
 * history of running streams read now, then that of detached ones (a resume from before the
 * oldest kept event then gets 410). Discard: an event that arrives and still does not fit (it
 * was larger than the one before, or others took the room) is dropped and its stream ends with
 * {@link ResumeStoreFullError}, its log kept, so a resume replays what was logged, then the error.
 */
export class MemoryResumeStore implements ResumeStore {
  readonly kind = 'memory' as const;
  private readonly held = new Map<string, Held>();
  /** Alias → the stream it names. */
  private readonly aliases = new Map<string, AliasEntry>();
  /** Stream ids of the finished streams still held, in the order they ended (the drop order). */
  private readonly finished = new Set<string>();
  private bytes = 0;
  /** Bytes set aside for requested events (see {@link Held.reserved}). */
  private reserved = 0;
  /** Streams that found no room, asked again by {@link wake}. */
  private readonly waiting = new Set<string>();
  private wakeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: MemoryStoreOptions) {}

  open(source: Flow<BridgeElement>, meta: StreamMeta, options: OpenOptions = {}): ReplayStream {
    const hooks = this.options.hooks?.(meta);
    const stream: ReplayStream = new ReplayStream(source, {
      streamId: meta.streamId,
      windowBytes: meta.settings.windowBytes,
      lingerMs: meta.settings.lingerMs,
      isKeepAlive: options.isKeepAlive,
      hasRoom: (nextBytes) => this.hasRoom(meta.streamId, nextBytes),
      admit: (bytes) => this.admit(meta.streamId, bytes),
      storeFull: () => new ResumeStoreFullError(this.options.maxBytes),
      onAppend: (seq, bytes, firstSeq) => {
        this.recount(meta.streamId);
        hooks?.onAppend?.(seq, bytes, firstSeq);
        const h = this.held.get(meta.streamId);
        if (options.aliasOf !== undefined && h !== undefined && h.alias === undefined && seq <= ALIAS_SCAN_EVENTS) {
          const alias = options.aliasOf(bytes);
          if (alias === undefined || alias.length > MAX_ALIAS_CHARS) return;
          h.alias = alias;
          this.nameAlias(alias, meta.streamId);
          hooks?.onAlias?.(alias);
        }
      },
      onEnd: (terminal) => {
        hooks?.onEnd?.(terminal);
        if (terminal.kind === 'cancelled') return this.drop(meta.streamId);
        const h = this.held.get(meta.streamId);
        if (h === undefined) return;
        this.unreserve(h);
        this.waiting.delete(meta.streamId);
        this.finished.add(meta.streamId);
        this.recount(meta.streamId);
        h.expiry = setTimeout(() => this.drop(meta.streamId), meta.settings.retentionMs);
        h.expiry.unref();
        // Its objects now count: past `maxBytes`, the oldest finished streams make way.
        this.makeRoom(0, this.options.maxBytes, false);
      },
    });
    this.held.set(meta.streamId, { meta, stream, counted: 0, reserved: 0 });
    return stream;
  }

  async find(streamId: string): Promise<StoredStream | undefined> {
    const h = this.held.get(streamId);
    if (h === undefined) return undefined;
    return { meta: h.meta, snapshot: async () => snapshotOf(h.stream), reader: async (afterSeq: number) => h.stream.reader(afterSeq) };
  }

  async resolve(alias: string): Promise<string | undefined> {
    return this.aliases.get(alias)?.streamId;
  }

  /** True when `alias` was named by more than one stream still held here (it resolves to none). */
  reused(alias: string): boolean {
    const entry = this.aliases.get(alias);
    return entry !== undefined && entry.streamId === undefined;
  }

  private nameAlias(alias: string, streamId: string): void {
    const entry = this.aliases.get(alias);
    if (entry === undefined) {
      this.aliases.set(alias, { streamId, holders: 1 });
      return;
    }
    entry.holders++;
    if (entry.streamId === undefined) return;
    entry.streamId = undefined;
    this.options.onAliasReused?.(alias);
  }

  private forgetAlias(alias: string): void {
    const entry = this.aliases.get(alias);
    if (entry !== undefined && --entry.holders === 0) this.aliases.delete(alias);
  }

  /** The running or retained stream `streamId` produced in this process. */
  local(streamId: string): ReplayStream | undefined {
    return this.held.get(streamId)?.stream;
  }

  logBytes(): number {
    return this.bytes;
  }

  detachedStreams(): number {
    let n = 0;
    for (const h of this.held.values()) if (h.stream.detached) n++;
    return n;
  }

  describeDetached(): DetachedStreamSnapshot[] {
    const out: DetachedStreamSnapshot[] = [];
    for (const h of this.held.values()) {
      if (h.stream.detached) out.push({ streamId: h.meta.streamId, route: h.meta.routePath, logBytes: h.stream.window.bytes, lastSeq: h.stream.window.lastSeq });
    }
    return out;
  }

  cancelDetached(): number {
    let n = 0;
    for (const h of [...this.held.values()]) if (h.stream.cancelIfDetached()) n++;
    return n;
  }

  async close(): Promise<void> {
    for (const id of [...this.held.keys()]) this.drop(id);
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.waiting.clear();
  }

  /** Counts a log's new size. */
  private recount(streamId: string): void {
    const h = this.held.get(streamId);
    if (h === undefined) return;
    const counted = h.stream.window.bytes + (this.finished.has(streamId) ? FINISHED_STREAM_BYTES : 0);
    this.bytes += counted - h.counted;
    h.counted = counted;
  }

  /** Before a request upstream: room for an event of about `nextBytes` besides the ones already set aside; sets it aside. */
  private hasRoom(streamId: string, nextBytes: number): boolean {
    const h = this.held.get(streamId);
    if (h === undefined) return true;
    this.unreserve(h);
    const limit = h.stream.detached ? Math.floor(this.options.maxBytes * DETACHED_SHARE) : this.options.maxBytes;
    const need = Math.min(Math.max(2 * nextBytes, MIN_RESERVE_BYTES), Math.max(1, Math.floor(limit / 8)));
    // Read-ahead of a detached stream never costs another stream its history.
    if (!this.makeRoom(this.reserved + need, limit, !h.stream.detached)) {
      this.waiting.add(streamId);
      this.wakeLater(ROOM_RETRY_MS);
      return false;
    }
    h.reserved = need;
    this.reserved += need;
    return true;
  }

  /** An event of `bytes` arrived for `streamId`: whether it fits (its set-aside room is its own). */
  private admit(streamId: string, bytes: number): boolean {
    const h = this.held.get(streamId);
    if (h !== undefined) this.unreserve(h);
    return this.makeRoom(bytes, this.options.maxBytes, true);
  }

  private unreserve(h: Held): void {
    this.reserved -= h.reserved;
    h.reserved = 0;
  }

  /**
   * Frees logs until `needed` more bytes fit under `max`: finished logs oldest first, then, with
   * `shed`, the history of streams someone reads, then of detached ones (their clients may come
   * back for it).
   */
  private makeRoom(needed: number, max: number, shed: boolean): boolean {
    if (needed > max) return false;
    if (this.bytes + needed <= max) return true;
    for (const id of this.finished) {
      if (this.bytes + needed <= max) return true;
      this.drop(id);
    }
    if (!shed) return false;
    for (const detached of [false, true]) {
      for (const h of this.held.values()) {
        if (this.bytes + needed <= max) return true;
        if (this.finished.has(h.meta.streamId) || h.stream.detached !== detached) continue;
        if (h.stream.shedHistory() > 0) this.recount(h.meta.streamId);
      }
    }
    return this.bytes + needed <= max;
  }

  /** Asks the streams waiting for room again, after `delayMs`. */
  private wakeLater(delayMs: number): void {
    if (this.wakeTimer !== undefined || this.waiting.size === 0) return;
    this.wakeTimer = setTimeout(() => this.wake(), delayMs);
    this.wakeTimer.unref();
  }

  /**
   * Asks the waiting streams again, oldest wait first. Once one finds no room, the others of its
   * kind (detached or read, asking against the same limit) stay waiting for the next round: a
   * full store costs a round two failed asks, not one per waiting stream.
   */
  private wake(): void {
    this.wakeTimer = undefined;
    const full = { detached: false, read: false };
    for (const id of [...this.waiting]) {
      const stream = this.held.get(id)?.stream;
      if (stream === undefined) {
        this.waiting.delete(id);
        continue;
      }
      const kind = stream.detached ? 'detached' : 'read';
      if (full[kind]) continue;
      this.waiting.delete(id);
      stream.poke();
      if (this.waiting.has(id)) full[kind] = true;
    }
    this.wakeLater(ROOM_RETRY_MS);
  }

  private drop(streamId: string): void {
    const h = this.held.get(streamId);
    if (h === undefined) return;
    this.held.delete(streamId);
    this.finished.delete(streamId);
    this.waiting.delete(streamId);
    this.unreserve(h);
    if (h.alias !== undefined) this.forgetAlias(h.alias);
    if (h.expiry !== undefined) clearTimeout(h.expiry);
    this.bytes -= h.counted;
    h.stream.release();
    if (h.counted > 0) this.wakeLater(0);
  }
}

/** The events `stream`'s window holds now. */
function snapshotOf(stream: ReplayStream): LogSnapshot {
  const { firstSeq, lastSeq } = stream.window;
  const events: Buffer[] = [];
  for (let seq = firstSeq; seq <= lastSeq; seq++) events.push(stream.window.get(seq) as Buffer);
  const t = stream.ended;
  return { firstSeq, lastSeq, events, ended: t === undefined ? undefined : t.kind === 'complete' ? 'complete' : 'error' };
}
