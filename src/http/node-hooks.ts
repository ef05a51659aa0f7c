/**
 * Every hook tidegate has into Node's and node-fetch's internals, in one place. Each is small and
 * documented where it is defined; spec/http/node-hooks.spec.ts fails loudly when a Node or
 * node-fetch upgrade changes what one relies on:
 *
 * | hook | relies on | gives |
 * |---|---|---|
 * | net `onread` (shared buffer, sized per call) | `net.Socket` option `onread: { buffer(), callback }` | pause stops reading at once; read sizes follow the budget |
 * | `http.Agent#addRequest` wrapper | node-fetch creates its `ClientRequest` synchronously in `fetch()` and hands it to `agent.addRequest(req, options)` | the call sees its `ClientRequest` (connect timer, response, socket) |
 * | `IncomingMessage#pipe` once | node-fetch 2 makes its body `res.pipe(new PassThrough())` | the body is the `IncomingMessage` itself (one stream less per call) |
 * | parser body callbacks off ({@link bypassBodyCallbacks}) | Node's HTTP parser looks its `kOnBody` callback up per chunk and skips a non-function; `kOnHeadersComplete` starts every message | a body costs one push per socket read, not one native copy and JS call per HTTP chunk |
 * | `CallSignal` | node-fetch 2 accepts a signal whose constructor is named `AbortSignal` and uses `aborted`, `add/removeEventListener('abort')` | an abort signal of under 100 bytes per call |
 * | `Socket#destroySoon` replaced | Node's HTTP server ends a `Connection: close` response's socket with `socket.destroySoon()` | a lingering close instead of a reset while a client still uploads |
 *
 * The interface to the rest of the code: {@link upstreamAgent}, {@link withClientRequest},
 * {@link expectRedirect}, {@link setReadCall} / {@link readCallOf}, {@link bodyIsResponse},
 * {@link bypassBodyCallbacks}, {@link CallSignal}, {@link onServerClose} and the read-size constants.
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { bodyStart, framingOf, type BodyFraming } from './body-framing';

/**
 * Bytes libuv reads from an upstream socket at once (plain HTTP) unless the call sets
 * {@link UpstreamRequest.readBytes}. Every upstream socket reads into one shared buffer (net
 * `onread`) instead of a fresh 64 KiB one per read, so a read holds at most this much, and a
 * paused socket holds nothing: `pause()` stops reading at once instead of after one more read
 * into the socket's own buffer.
 */
export const UPSTREAM_READ_BYTES = 16 * 1024;
/** Largest read of an upstream socket, bytes, with {@link UpstreamRequest.readBytes} (Node's own read size). */
export const UPSTREAM_MAX_READ_BYTES = 64 * 1024;
/** Smallest read of an upstream socket, bytes: a `readBytes` below it still reads this much. */
export const UPSTREAM_MIN_READ_BYTES = 1024;
/**
 * Readable high-water mark of an upstream response (`IncomingMessage` takes its socket's), bytes:
 * a paused body stops its socket once this much is queued (plus the rest of the read in progress,
 * at most {@link UPSTREAM_READ_BYTES}, or the call's `readBytes`).
 */
export const UPSTREAM_HIGH_WATER_MARK = 4 * 1024;

const sharedReadBuffer = Buffer.allocUnsafeSlow(UPSTREAM_MAX_READ_BYTES);
const defaultReadView = sharedReadBuffer.subarray(0, UPSTREAM_READ_BYTES);
/** Where a socket finds the call whose body it reads, when that call sizes its reads (`readBytes`). */
const kReadCall = Symbol('tidegate.readCall');
type ReadSized = Socket & { [kReadCall]?: SizedReadCall | undefined };

/** What a socket asks of the call whose body it reads, when that call sizes its reads. */
export interface SizedReadCall {
  /** True while this call's reads are sized (an identity body on this socket, not complete). */
  readsSized(): boolean;
  /** Most bytes the next read may take (clamped to 1–64 KiB, whole KiB). */
  nextReadBytes(): number;
}

/** Sizes the reads of `socket` by `call` from now on (`undefined`: back to {@link UPSTREAM_READ_BYTES}). */
export function setReadCall(socket: Socket, call: SizedReadCall | undefined): void {
  (socket as ReadSized)[kReadCall] = call;
}

/** The call that sizes the reads of `socket`, if any. */
export function readCallOf(socket: Socket | null | undefined): SizedReadCall | undefined {
  return (socket as ReadSized | null | undefined)?.[kReadCall];
}
/** The socket whose read `onUpstreamRead` just handed on: net asks `nextReadBuffer()` right after, with no arguments. */
let lastReadSocket: ReadSized | undefined;

/**
 * `onread` callback: hands the bytes to the HTTP client's parser as a `'data'` event, without a
 * copy. Safe because the parser is the socket's only `'data'` listener and it copies what it
 * keeps (body slices, partial headers) before `execute()` returns, i.e. before the next read
 * reuses the buffer; the integrity spec in spec/http/request-memory.spec.ts checks this.
 */
function onUpstreamRead(this: Socket, nread: number, buffer: Uint8Array): boolean {
  lastReadSocket = this;
  const bytes = Buffer.from(buffer.buffer, buffer.byteOffset, nread);
  const bypass = (this as Bypassed)[kBypass];
  bypass?.take(bytes, 0);
  readingSocket = this;
  readingBytes = bytes;
  try {
    this.emit('data', bytes);
  } finally {
    readingSocket = undefined;
    readingBytes = undefined;
  }
  // Also a bypass that began inside this read (at its response's head).
  (this as Bypassed)[kBypass]?.afterRead();
  return true;
}

/**
 * `onread.buffer` as a function: Node (lib/internal/stream_base_commons.js `onStreamRead`) calls
 * it after each read's callback, when the read's bytes have gone as far down the chain as they
 * go synchronously, and reads next into what it returns. A socket whose call gave `readBytes`
 * reads that much (1–64 KiB), the others {@link UPSTREAM_READ_BYTES}.
 */
function nextReadBuffer(): Buffer {
  const socket = lastReadSocket;
  lastReadSocket = undefined;
  const call = socket?.[kReadCall];
  // A complete response's socket goes back to the pool: its next read is the next call's.
  if (call === undefined || !call.readsSized()) return defaultReadView;
  const bytes = call.nextReadBytes();
  if (bytes >= UPSTREAM_MAX_READ_BYTES) return sharedReadBuffer;
  return readView((bytes > UPSTREAM_MIN_READ_BYTES ? bytes : UPSTREAM_MIN_READ_BYTES) >> 10);
}

/**
 * The shared buffer's first `kib` KiB, one view per size made once: net keeps the next read's
 * buffer on the socket until data arrives, so a fresh view per read would live as long as the
 * gap between reads and be promoted to the old generation on every slow stream.
 */
const readViews: Buffer[] = [];
function readView(kib: number): Buffer {
  return (readViews[kib] ??= sharedReadBuffer.subarray(0, kib << 10));
}

/** Who waits for the `ClientRequest` of the `fetch()` running now: node-fetch builds it synchronously inside `fetch()`, so the agent's `addRequest` sees it. */
let sendingCall: ((req: http.ClientRequest) => void) | undefined;

/**
 * Runs `send` (a node-fetch `fetch()` through {@link upstreamAgent}) and hands `onRequest` the
 * `ClientRequest` node-fetch creates for it, which node-fetch exposes nowhere else.
 */
export function withClientRequest<T>(onRequest: (req: http.ClientRequest) => void, send: () => T): T {
  sendingCall = onRequest;
  try {
    return send();
  } finally {
    sendingCall = undefined;
  }
}

/**
 * Hands `onRequest` the next `ClientRequest` the agents get within this tick: the request
 * node-fetch sends for a redirect from its `'response'` listener.
 */
export function expectRedirect(onRequest: (req: http.ClientRequest) => void): void {
  sendingCall = onRequest;
  queueMicrotask(() => {
    if (sendingCall === onRequest) sendingCall = undefined;
  });
}

type AgentInternals = { addRequest(req: http.ClientRequest, options: unknown): void };

/** Lets the call being sent see its `ClientRequest` (node-fetch exposes none) as the agent gets it. */
function hooked<A extends http.Agent>(agent: A): A {
  const internals = agent as unknown as AgentInternals;
  const addRequest = internals.addRequest;
  internals.addRequest = function (this: http.Agent, req: http.ClientRequest, options: unknown): void {
    const onRequest = sendingCall;
    sendingCall = undefined;
    onRequest?.(req);
    addRequest.call(this, req, connectionOptions(options));
  };
  return agent;
}

/** Request options the agent never needs to open or pool a connection: node-fetch's parsed URL, the request line and headers. */
const REQUEST_ONLY_OPTIONS = new Set(['href', 'path', 'pathname', 'search', 'query', 'hash', 'slashes', 'auth', 'protocol', 'method', 'headers', 'agent']);

/**
 * The request's options without {@link REQUEST_ONLY_OPTIONS}. The agent copies what it gets into
 * a dictionary-mode object that the socket's pool listeners keep for the socket's lifetime: with
 * node-fetch's ~20 URL and request fields and a copy of the headers, about 1.7 KB per upstream
 * socket; this keeps only the connection's (host, port, family, timeout, TLS fields, ...).
 */
function connectionOptions(options: unknown): unknown {
  if (typeof options !== 'object' || options === null) return options;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(options)) {
    if (!REQUEST_ONLY_OPTIONS.has(key)) out[key] = (options as Record<string, unknown>)[key];
  }
  return out;
}

/** Keep-alive agents used only for upstream calls, separate from any other HTTP use. */
const agents = {
  http: hooked(
    new http.Agent({
      keepAlive: true,
      maxSockets: Infinity,
      // Passed to net.createConnection(): the socket's read path (above) and its high-water mark.
      ...({ readableHighWaterMark: UPSTREAM_HIGH_WATER_MARK, onread: { buffer: nextReadBuffer, callback: onUpstreamRead } } as object),
    }),
  ),
  // tls.connect() takes `highWaterMark` (both directions); its `onread` is left alone.
  https: hooked(new https.Agent({ keepAlive: true, maxSockets: Infinity, ...({ highWaterMark: UPSTREAM_HIGH_WATER_MARK } as object) })),
};

/**
 * node-fetch 2 hands out `res.pipe(new PassThrough())` as the body: one more stream with 16 KiB
 * buffers on each side, per upstream stream. Its first `pipe()` on the response gets the response
 * itself back instead, so the body is the `IncomingMessage`; a compressed body is then piped, for
 * real, into zlib by node-fetch's second `pipe()`.
 */
export function bodyIsResponse(res: http.IncomingMessage): void {
  (res as { pipe: unknown }).pipe = function pipeOnce(this: http.IncomingMessage): http.IncomingMessage {
    Reflect.deleteProperty(this, 'pipe');
    return this;
  };
}

/** Picks the keep-alive agent for a URL. */
export function upstreamAgent(url: URL): http.Agent {
  return url.protocol === 'https:' ? agents.https : agents.http;
}

/**
 * The abort signal node-fetch watches for one call. node-fetch 2 uses only `aborted` and
 * `add`/`removeEventListener('abort')` of a signal, and recognises one by its prototype's
 * constructor name. A WHATWG `AbortController` with its `AbortSignal` costs about 1 KB of heap
 * per call held for the whole stream (Node gives every `AbortSignal` a hidden class of its own);
 * this costs under 100 bytes.
 */
export const CallSignal = class AbortSignal {
  aborted = false;
  reason: unknown = undefined;
  /** The `'abort'` listeners, until it aborted. */
  listeners: (() => void)[] | undefined;

  addEventListener(type: string, listener: () => void): void {
    if (type === 'abort') (this.listeners ??= []).push(listener);
  }

  removeEventListener(type: string, listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners?.splice(i, 1);
  }

  /** Aborts once: `reason` (a `DOMException` `AbortError` when undefined), then the listeners. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const listener of listeners) listener();
  }
};

/** Where a read's body bytes are gathered before they are copied into a chunk of their own. */
const scratch = Buffer.allocUnsafeSlow(UPSTREAM_MAX_READ_BYTES);

/** The socket and bytes of the read being handed to the HTTP parser now (inside `onUpstreamRead`'s emit). */
let readingSocket: Socket | undefined;
let readingBytes: Buffer | undefined;

const kBypass = Symbol('tidegate.bodyBypass');
type Bypassed = Socket & { [kBypass]?: BodyBypass | undefined; parser?: ParserInternals | null };
/** The parts of Node's `HTTPParser` (lib/_http_common.js) the bypass touches. */
type ParserInternals = Record<number, unknown> & { incoming: http.IncomingMessage | null };
type ResponseInternals = http.IncomingMessage & { _dumped?: boolean; req?: http.ClientRequest };

/** The parser's callback slots (`HTTPParser.kOnBody`, `kOnHeadersComplete`), found once by the names Node gives its callbacks. */
let slots: { body: number; headers: number; onBody: unknown } | null | undefined;
function parserSlots(parser: ParserInternals): typeof slots {
  if (slots !== undefined) return slots;
  let body = -1;
  let headers = -1;
  for (let i = 0; i < 16; i++) {
    const f = parser[i];
    if (typeof f !== 'function') continue;
    if (f.name === 'parserOnBody') body = i;
    else if (f.name === 'parserOnHeadersComplete') headers = i;
  }
  slots = body < 0 || headers < 0 ? null : { body, headers, onBody: parser[body] };
  return slots;
}

/**
 * Takes the body of `res` off Node's HTTP parser callbacks: the parser goes on framing every
 * byte (chunk sizes, the end of the body, keep-alive, errors), but with its `kOnBody` slot empty
 * it no longer copies each HTTP chunk into a Buffer and calls into JS for it. Before the parser
 * goes through a socket read, {@link BodyFraming} copies that read's body bytes out of it, and
 * the response gets them as one chunk (one `push()`, one `'data'`). An LLM server writes one event per HTTP
 * chunk, often a hundred to a read: this makes them cost one pass through the relay.
 *
 * Only where every byte is known: a response whose head arrived whole at the start of the read
 * being parsed (status and header count checked against the parser's), over a socket that reads
 * through {@link onUpstreamRead}, with a `chunked` or `Content-Length` body. Otherwise returns
 * `false` and the parser delivers the body as before. Must be called from the request's
 * `'response'` listener. `onRead` is called after each read's bytes were pushed.
 *
 * The parser's callbacks are given back when the body ends, when the socket closes, and in any
 * case before the next message this parser reads (kept alive, or taken from Node's pool) gets
 * its body. If the decoder and the parser disagree on where the body ends, or the decoder does
 * not understand framing the parser accepted, the socket is destroyed: never a short body
 * without an error.
 */
export function bypassBodyCallbacks(res: http.IncomingMessage, onRead?: () => void): boolean {
  const socket = res.socket as Bypassed | null;
  const bytes = readingBytes;
  if (socket === null || socket !== readingSocket || bytes === undefined || socket[kBypass] !== undefined) return false;
  const parser = socket.parser;
  if (parser == null || parser.incoming !== res) return false;
  const found = parserSlots(parser);
  if (found == null || parser[found.body] !== found.onBody) return false;
  const status = res.statusCode ?? 0;
  if ((res as ResponseInternals).req?.method === 'HEAD' || status < 200 || status === 204 || status === 304) return false;
  const framing = framingOf(res);
  if (framing === undefined) return false;
  const start = bodyStart(bytes, res);
  if (start < 0) return false;
  const bypass = new BodyBypass(socket, parser, res, framing, found, onRead);
  socket[kBypass] = bypass;
  // The rest of this read, before the parser goes on through it.
  bypass.take(bytes, start);
  return true;
}

/** One response whose body bypasses the parser's callbacks (see {@link bypassBodyCallbacks}). */
class BodyBypass {
  /** Node's headers-complete callback, wrapped while the bypass lasts (see {@link restore}). */
  private readonly onHeadersComplete: (...args: unknown[]) => unknown;

  constructor(
    private readonly socket: Bypassed,
    private readonly parser: ParserInternals,
    private readonly res: ResponseInternals,
    private readonly framing: BodyFraming,
    private readonly found: NonNullable<typeof slots>,
    private readonly onRead: (() => void) | undefined,
  ) {
    parser[found.body] = undefined;
    this.onHeadersComplete = parser[found.headers] as (...args: unknown[]) => unknown;
    // Safety net: a next message on this parser (kept alive, or taken from Node's pool) gives
    // the callbacks back before its body, whatever way this one ended.
    parser[found.headers] = this.nextHeaders;
    socket.once('close', this.restore);
  }

  /**
   * Before the parser goes through a read (from the read's `from`): its body bytes, one push.
   * Before, so that bytes ahead of a framing error reach the response before the error does.
   */
  take(bytes: Buffer, from: number): void {
    const out = bytes.length - from <= scratch.length ? scratch : Buffer.allocUnsafe(bytes.length - from);
    const n = this.framing.decode(bytes, from, bytes.length, out, 0);
    const { res } = this;
    if (n === 0 || res._dumped === true || res.destroyed) return;
    const body = Buffer.allocUnsafe(n);
    body.set(n === out.length ? out : out.subarray(0, n));
    // As Node's parserOnBody: a full response stops reading its socket until it is read.
    if (!res.push(body)) this.socket.pause();
  }

  /** After the parser went through a read: ends the bypass with the body, checks the two agree. */
  afterRead(): void {
    const { framing, res, socket } = this;
    // The parser frames the same bytes: a disagreement would lose data, so it breaks the response.
    if (!socket.destroyed) {
      if (framing.failure !== undefined) this.break(`upstream body framing not understood (${framing.failure})`);
      else if (framing.done !== res.complete) this.break('upstream body and message ended apart');
    }
    if (res.complete || this.parser.incoming !== res || socket.destroyed) this.restore();
    this.onRead?.();
  }

  private readonly nextHeaders = (...args: unknown[]): unknown => {
    this.restore();
    return this.onHeadersComplete.apply(this.parser, args);
  };

  private break(reason: string): void {
    this.restore();
    this.socket.destroy(Object.assign(new Error(reason), { code: 'ECONNRESET' }));
  }

  /** Gives the parser its callbacks back (it may serve another response next). */
  private readonly restore = (): void => {
    const { parser, found, socket } = this;
    if (socket[kBypass] === this) socket[kBypass] = undefined;
    socket.off('close', this.restore);
    if (parser[found.headers] !== this.nextHeaders) return;
    parser[found.body] = found.onBody;
    parser[found.headers] = this.onHeadersComplete;
  };
}

/**
 * Makes `close` run where Node's HTTP server would close a served connection itself: after a
 * response sent with `Connection: close`, Node calls `socket.destroySoon()` (lib/_http_server.js
 * `resOnFinish`), which destroys the socket once written, with a RST if request bytes are still
 * unread. The gateway's lingering close (`gateway/admission.ts`) takes that place.
 */
export function onServerClose(socket: Socket, close: () => void): void {
  (socket as { destroySoon: () => void }).destroySoon = close;
}
