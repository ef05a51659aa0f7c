import type { Flow } from '../../flow/flow';
import type { BridgeElement } from '../../express/send-flow';
import { ReplayStream, type ReplayStreamOptions } from './replay-stream';
import type { ResumeStore, StoredStream, StreamMeta } from './store';

/** One stream held by the {@link MemoryResumeStore}. */
interface Held {
  readonly meta: StreamMeta;
  readonly stream: ReplayStream;
  /** Bytes of its log counted in the store's total. */
  counted: number;
  /** `performance.now()` when it ended (`undefined` while it runs). */
  endedAt?: number | undefined;
  expiry?: NodeJS.Timeout | undefined;
}

/** Options of a {@link MemoryResumeStore}. */
export interface MemoryStoreOptions {
  /** Bytes every log together may hold; past it, finished streams' logs are dropped, oldest first. */
  maxBytes: number;
  /** Extra hooks for each stream opened (a shared store mirrors its events). */
  hooks?: ((meta: StreamMeta) => Pick<ReplayStreamOptions, 'onAppend' | 'onEnd'>) | undefined;
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
  private bytes = 0;

  constructor(private readonly options: MemoryStoreOptions) {}

  open(source: Flow<BridgeElement>, meta: StreamMeta, isKeepAlive?: ReplayStreamOptions['isKeepAlive']): ReplayStream {
    const hooks = this.options.hooks?.(meta);
    const stream: ReplayStream = new ReplayStream(source, {
      streamId: meta.streamId,
      windowBytes: meta.settings.windowBytes,
      lingerMs: meta.settings.lingerMs,
      isKeepAlive,
      onAppend: (seq, bytes, firstSeq) => {
        this.recount(meta.streamId);
        hooks?.onAppend?.(seq, bytes, firstSeq);
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
    return { meta: h.meta, reader: async (afterSeq: number) => h.stream.reader(afterSeq) };
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
    if (h.expiry !== undefined) clearTimeout(h.expiry);
    this.bytes -= h.counted;
    h.stream.release();
  }
}
