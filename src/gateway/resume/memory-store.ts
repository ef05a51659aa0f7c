import type { Flow } from '../../flow/flow';
import type { BridgeElement } from '../../express/send-flow';
import { ReplayStream, type ReplayStreamOptions } from './replay-stream';
import { ALIAS_SCAN_EVENTS, type DetachedStreamSnapshot, type LogSnapshot, type OpenOptions, type ResumeStore, type StoredStream, type StreamMeta } from './store';

/** Longest alias kept (a provider's response id is far shorter). */
const MAX_ALIAS_CHARS = 256;

/** One stream held by the {@link MemoryResumeStore}. */
interface Held {
  readonly meta: StreamMeta;
  readonly stream: ReplayStream;
  /** Bytes of its log counted in the store's total. */
  counted: number;
  /** `performance.now()` when it ended (`undefined` while it runs). */
  endedAt?: number | undefined;
  expiry?: NodeJS.Timeout | undefined;
  /** Its alias ({@link OpenOptions.aliasOf}), once an event named one. */
  alias?: string | undefined;
}

/** Options of a {@link MemoryResumeStore}. */
export interface MemoryStoreOptions {
  /** Bytes every log together may hold; past it, finished streams' logs are dropped, oldest first. */
  maxBytes: number;
  /** Extra hooks for each stream opened (a shared store mirrors its events). */
  hooks?: ((meta: StreamMeta) => Pick<ReplayStreamOptions, 'onAppend' | 'onEnd'> & { onAlias?: ((alias: string) => void) | undefined }) | undefined;
}

/**
 * The embedded store: each stream's {@link ReplayStream} and its window in this process. A
 * stream is kept while it runs and for `retentionMs` after it ended; one cancelled (no reader
 * came back within `lingerMs`) is dropped at once.
 *
 * Bounded: each log by its `windowBytes`; all together by `maxBytes`: when an append takes the
 * total past it, finished streams are dropped oldest first (running streams keep their logs,
 * which `windowBytes` and the gateway's stream cap bound).
 */
export class MemoryResumeStore implements ResumeStore {
  readonly kind = 'memory' as const;
  private readonly held = new Map<string, Held>();
  /** Alias → stream id. */
  private readonly aliases = new Map<string, string>();
  private bytes = 0;

  constructor(private readonly options: MemoryStoreOptions) {}

  open(source: Flow<BridgeElement>, meta: StreamMeta, options: OpenOptions = {}): ReplayStream {
    const hooks = this.options.hooks?.(meta);
    const stream: ReplayStream = new ReplayStream(source, {
      streamId: meta.streamId,
      windowBytes: meta.settings.windowBytes,
      lingerMs: meta.settings.lingerMs,
      isKeepAlive: options.isKeepAlive,
      onAppend: (seq, bytes, firstSeq) => {
        this.recount(meta.streamId);
        hooks?.onAppend?.(seq, bytes, firstSeq);
        const h = this.held.get(meta.streamId);
        if (options.aliasOf !== undefined && h !== undefined && h.alias === undefined && seq <= ALIAS_SCAN_EVENTS) {
          const alias = options.aliasOf(bytes);
          if (alias === undefined || alias.length > MAX_ALIAS_CHARS) return;
          h.alias = alias;
          this.aliases.set(alias, meta.streamId);
          hooks?.onAlias?.(alias);
        }
      },
      onEnd: (terminal) => {
        hooks?.onEnd?.(terminal);
        if (terminal.kind === 'cancelled') return this.drop(meta.streamId);
        const h = this.held.get(meta.streamId);
        if (h === undefined) return;
        h.endedAt = performance.now();
        h.expiry = setTimeout(() => this.drop(meta.streamId), meta.settings.retentionMs);
        h.expiry.unref();
      },
    });
    this.held.set(meta.streamId, { meta, stream, counted: 0 });
    return stream;
  }

  async find(streamId: string): Promise<StoredStream | undefined> {
    const h = this.held.get(streamId);
    if (h === undefined) return undefined;
    return { meta: h.meta, snapshot: async () => snapshotOf(h.stream), reader: async (afterSeq: number) => h.stream.reader(afterSeq) };
  }

  async resolve(alias: string): Promise<string | undefined> {
    return this.aliases.get(alias);
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
  }

  /** Counts a log's new size, then drops finished logs, oldest first, while over the cap. */
  private recount(streamId: string): void {
    const h = this.held.get(streamId);
    if (h === undefined) return;
    this.bytes += h.stream.window.bytes - h.counted;
    h.counted = h.stream.window.bytes;
    if (this.bytes <= this.options.maxBytes) return;
    const finished = [...this.held.values()].filter((h) => h.endedAt !== undefined).sort((a, b) => (a.endedAt as number) - (b.endedAt as number));
    for (const h of finished) {
      if (this.bytes <= this.options.maxBytes) break;
      this.drop(h.meta.streamId);
    }
  }

  private drop(streamId: string): void {
    const h = this.held.get(streamId);
    if (h === undefined) return;
    this.held.delete(streamId);
    if (h.alias !== undefined && this.aliases.get(h.alias) === streamId) this.aliases.delete(h.alias);
    if (h.expiry !== undefined) clearTimeout(h.expiry);
    this.bytes -= h.counted;
    h.stream.release();
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
