import type { ServerResponse } from 'node:http';
import type { SseEvent, SseEventInit, SseFrame } from '../sse';

/** Token counts a provider reported; each field only when the provider sent it. */
export interface TokenUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
}

/**
 * One upstream event as the gateway sees it: what it means (`type`), and `wire`, the
 * provider's own frame to re-emit so the client's SDK reads exactly what the provider sent.
 *
 * - `delta`: generated text (`text`); may carry `usage` too (servers that report usage per chunk);
 * - `usage`: token counts only;
 * - `error`: an error frame inside the stream; the gateway ends the stream with it;
 * - `done`: the provider's terminator (OpenAI `data: [DONE]`, Anthropic `message_stop`, Responses
 *   `response.completed`), with the usage it reports (Responses);
 * - `frame`: anything else (role chunk, `ping`, `content_block_start` …), relayed as is;
 * - `frames`: the byte relay's unit (see `adaptFrames`): whole upstream event blocks relayed as
 *   their own bytes, `delta` when one of them carried text, `usage` the last counts reported in
 *   them. Only routes without a user policy relay bytes, so a `StreamPolicyFn` never sees one.
 */
export type GatewayEvent =
  | { readonly type: 'delta'; readonly text: string; readonly usage?: TokenUsage | undefined; readonly wire: SseEventInit }
  | { readonly type: 'usage'; readonly usage: TokenUsage; readonly wire: SseEventInit }
  | { readonly type: 'error'; readonly error: Error; readonly wire: SseEventInit }
  | { readonly type: 'done'; readonly wire: SseEventInit; readonly usage?: TokenUsage | undefined }
  | { readonly type: 'frame'; readonly wire: SseEventInit }
  | { readonly type: 'frames'; readonly wire: SseFrame; readonly delta: boolean; readonly usage?: TokenUsage | undefined };

/** The providers tidegate speaks. */
export type ProviderName = 'openai' | 'anthropic' | 'passthrough';

/**
 * A provider adapter: decodes the provider's SSE events into {@link GatewayEvent}s and writes
 * errors in the provider's protocol, so the official SDK raises them.
 */
export interface ProviderAdapter {
  readonly name: ProviderName;
  /** EOF without a `done` event is `ERR_TIDEGATE_UPSTREAM_TRUNCATED` (true for OpenAI and Anthropic). */
  readonly requiresTerminator: boolean;
  /** Request headers a client may send that are forwarded by default (lower case). */
  readonly defaultForwardHeaders: readonly string[];
  /** A fresh decoder for one stream (decoders may keep state, e.g. the last event id). */
  decoder(): (event: SseEvent) => GatewayEvent;
  /**
   * For the byte relay: `true` when a frame (whole event blocks, LF line ends, valid UTF-8) may
   * hold an event this adapter must decode (its terminator, an error, usage). A native substring
   * scan, never a parse: a false `true` only costs a decode, a false `false` would relay an
   * event unseen, so a name spelt with JSON escapes must count (see `hasAsciiEscape`).
   * Absent: every frame is decoded.
   */
  needsDecode?: ((frame: Buffer) => boolean) | undefined;
  /**
   * For the byte relay: the bytes sent in place of the block of the terminator `event` (decoded),
   * or `undefined` to relay the block as it came (also when absent). OpenAI: `data: [DONE]\n\n`
   * for a form its SDK would not match (`data:  [DONE]`), as the event relay's wire does.
   */
  terminatorFrame?: ((event: SseEvent) => Buffer | undefined) | undefined;
  /** Headers that carry the configured upstream credential (never the client's). */
  authHeaders(apiKey: string | undefined): Record<string, string>;
  /**
   * An error written after the stream started, in the provider's SSE protocol (one event, or a
   * frame of several). An upstream HTTP error whose body is the provider's error JSON (after an
   * early commit) is written as the upstream's own error, as its error frame would be.
   */
  formatError(error: unknown): SseEventInit | SseFrame;
  /**
   * A fresh adapter for one stream, when the protocol's errors continue the stream's state
   * (Responses: the last `sequence_number` and the response id). Absent: the adapter is shared.
   */
  forStream?: (() => ProviderAdapter) | undefined;
  /**
   * Follows, in one event's encoded SSE bytes as a resume replays them (never decoded), the state
   * this stream's {@link formatError} continues from (Responses: the last `sequence_number` and
   * the response id), so a resumed stream that fails ends as the original did. Only on a
   * {@link forStream} adapter.
   */
  observe?: ((event: Buffer) => void) | undefined;
  /**
   * Tells this stream's adapter that its client already has every event numbered up to
   * `position` in the provider's own numbering (Responses: `starting_after`, a
   * `sequence_number`): the error frames {@link formatError} writes from then on leave out the
   * events so numbered, so a stream resumed after its own error events gets none twice. Only on a
   * {@link forStream} adapter.
   */
  resumedAfter?: ((position: number) => void) | undefined;
  /** An error answered before the stream started: status and JSON body in the provider's shape. */
  sendHttpError(res: ServerResponse, error: unknown): void;
  /**
   * True for a provider keep-alive event (Anthropic's `event: ping`), which SDKs drop: a
   * resumable stream gives it no `id:` and no seq, so the events an SDK yields count the seqs.
   */
  isKeepAlive?: ((event: { readonly event?: string | undefined }) => boolean) | undefined;
  /**
   * The id a client resumes a resumable stream by in the provider's own form, read from one
   * relayed event's encoded SSE bytes (Responses: `response.id` of `response.created`), or
   * `undefined`. The gateway asks of the first events only (see `resume/responses-endpoint.ts`).
   */
  resumeAliasOf?: ((event: Buffer) => string | undefined) | undefined;
  /** Rewrites a JSON request body to ask the upstream for a non-stream answer (the `stream: false` fallback). */
  nonStreamBody?: ((body: Record<string, unknown>) => Record<string, unknown>) | undefined;
}
