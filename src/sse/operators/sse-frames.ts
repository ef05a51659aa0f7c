import { Flow, type FlowOperator } from '../../flow/flow';
import { ChunkDecodeSubscriber } from './decode-subscriber';
import { createFrameSplitter, type SseFrame } from '../codec/frames';

/** Options for {@link sseFrames}. */
export interface SseFramesOptions {
  /** Largest event block in bytes, lines and line ends included (default 1 MiB). */
  maxEventBytes?: number | undefined;
  /** Target frame size in bytes (default 16 KiB); a larger single block is a frame of its own. */
  maxFrameBytes?: number | undefined;
  /**
   * Kept equal to the bytes this operator holds: the frames waiting in the queue and the
   * incomplete block carried to the next chunk, for a caller that counts them (e.g. against the
   * stream's `ByteBudget` with `attachExternal(() => queued.bytes)`). When it has an
   * `outputBytes` field, that is kept equal to the queued frames' bytes alone: the frames are
   * views of the chunks fed, the incomplete block a copy the operator owns.
   */
  queued?: { bytes: number; outputBytes?: number } | undefined;
}

/**
 * Cuts a byte stream (`text/event-stream`) into {@link SseFrame}s with
 * {@link createFrameSplitter}: the upstream's own bytes, cut at event boundaries (WHATWG HTML
 * §9.2.6), LF-only and valid UTF-8, for a relay that forwards events without decoding them.
 *
 * ```
 * bytes:  --[data: a\n\ndata: b\n\nda]--[ta: c\n\n]--|
 * frames: --[data: a\n\ndata: b\n\n]----[data: c\n\n]--|
 * ```
 *
 * Demand: one upstream chunk at a time while downstream demand is unmet and no frame is waiting
 * (unbounded when downstream demand is); the frames of one chunk wait in a queue, so it holds at
 * most one chunk's bytes (reported in `queued` when given).
 * Discard: queued frames on cancel.
 * Errors: an event block over `maxEventBytes` ({@link SseLimitError}, `ERR_TIDEGATE_SSE_LIMIT`)
 * cancels upstream at once; frames cut before it are delivered first. An unterminated last block
 * is dropped at completion (§9.2.6).
 *
 * @example
 * fromReadable(res.body).pipe(sseFrames()).subscribe((f) => socket.write(f.bytes));
 */
export function sseFrames(options: SseFramesOptions = {}): FlowOperator<Uint8Array, SseFrame> {
  return (source) =>
    new Flow<SseFrame>((actual, context) =>
      source.subscribeWith(
        new ChunkDecodeSubscriber<SseFrame>(actual, context, (push, fail) =>
          createFrameSplitter({ onFrame: push, onError: fail, maxEventBytes: options.maxEventBytes, maxFrameBytes: options.maxFrameBytes }),
          options.queued === undefined ? undefined : { counter: options.queued, sizeOf: frameBytes },
        ),
        context,
      ),
    );
}

function frameBytes(frame: SseFrame): number {
  return frame.bytes.length;
}
