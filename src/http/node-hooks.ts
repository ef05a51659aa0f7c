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
 * | parser body callback off ({@link muteBodyCallbacks}, used by `body-bypass.ts`) | Node's HTTP parser looks its `kOnBody` callback up per chunk and skips a non-function; `kOnHeadersComplete` starts every message | a body costs one push per socket read, not one native copy and JS call per HTTP chunk |
 * | `CallSignal` | node-fetch 2 accepts a signal whose constructor is named `AbortSignal` and uses `aborted`, `add/removeEventListener('abort')` | an abort signal of under 100 bytes per call |
 * | `socketFd`, `acceptedBy` | `net.Socket#_handle.fd` (a TLS socket's: `_handle._parent.fd`; a listening `net.Server`'s: `_handle.fd`); `net.Socket#server`, set as a server accepts it | the descriptor the socket options addon works on; the listener whose options an accepted socket inherited |
 * | `createConnection` on the upstream agents | `http.Agent` opens each socket through its `createConnection(options, callback)` | the upstream socket's receive buffer is bounded before the request is written |
 * | `Socket#destroySoon` replaced | Node's HTTP server ends a `Connection: close` response's socket with `socket.destroySoon()` | a lingering close instead of a reset while a client still uploads |
 * | agent view (`callAgent`) | as the `addRequest` wrapper, on a caller's own agent | the same, without changing the caller's agent |
 * | request header map dropped ({@link dropSentHeaders}) | a `ClientRequest` keeps its headers under the `kOutHeaders` symbol; once `_header` is written Node reads them only for `getHeader()` and kin | a held stream keeps only its written head |
 * | written head dropped ({@link dropWrittenHead}) | an `OutgoingMessage` keeps its rendered head in `_header`; once `_headerSent`, Node tests `_header` only for truth | a held stream keeps no copy of the heads it wrote |
 * | response header map dropped ({@link dropReceivedHeaders}) | an `IncomingMessage`'s `headers` (a setter over its cached map) and `rawHeaders` are read by Node only while the head is parsed | a held stream keeps no copy of the upstream's head |
 * | node-fetch's listeners dropped ({@link releaseFetchListeners}) | node-fetch 2 keeps its `fetch()` scope (`Request`, headers, body, options) only through its listeners on the `ClientRequest`, the response and the signal | a held stream keeps none of its request's objects |
 * | gunzip's last flush ({@link strictGzipEnd}) | node-fetch 2 gunzips with `finishFlush: Z_SYNC_FLUSH`; a zlib stream keeps it in `_finishFlushFlag` and reads it for its last chunk | a gzip body cut before its end is an error, as a cut deflate body is |
 *
 * The interface to the rest of the code: {@link upstreamAgent}, {@link callAgent}, {@link withClientRequest},
 * {@link expectRedirect}, {@link setReadCall} / {@link readCallOf}, {@link bodyIsResponse},
 * {@link setReadHook}, {@link readBeingParsed}, {@link muteBodyCallbacks}, {@link CallSignal},
 * {@link onServerClose}, {@link socketFd}, {@link acceptedBy}, {@link setUpstreamReceiveBytes},
 * {@link releaseFetchListeners}, {@link dropSentHeaders}, {@link dropWrittenHead}, {@link dropReceivedHeaders}, {@link strictGzipEnd}, the read sizes.
 */
import http from 'node:http';
import https from 'node:https';
import net, { type Socket } from 'node:net';
import zlib from 'node:zlib';
import { setSocketOption } from './socket-options';
import { upstreamReceiveBytesSetting } from './receive-bytes';
import { dropListenersSince, type ListenerMark } from './listener-mark';
import { UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MAX_READ_BYTES, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES } from './read-sizes';
export { UPSTREAM_HIGH_WATER_MARK, UPSTREAM_MAX_READ_BYTES, UPSTREAM_MIN_READ_BYTES, UPSTREAM_READ_BYTES } from './read-sizes';
export { DEFAULT_UPSTREAM_RECEIVE_BYTES, MIN_UPSTREAM_RECEIVE_BYTES, setUpstreamReceiveBytes, upstreamReceiveBytesSetting } from './receive-bytes';

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
  (this as Hooked)[kReadHook]?.beforeParse(bytes);
  readingSocket = this;
  readingBytes = bytes;
  this.emit('data', bytes);
  readingSocket = readingBytes = undefined;
  // Also a hook set inside this read (at its response's head).
  (this as Hooked)[kReadHook]?.afterParse();
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
  // The read's bytes went as far as they go, and sizing flushed what the consumer batched.
  (socket as Hooked)[kReadHook]?.afterSized?.();
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

/** An `addRequest` that first hands the `ClientRequest` to the call being sent (node-fetch exposes none), then to `addRequest`. */
function seeingRequest(addRequest: (req: http.ClientRequest, options: unknown) => void): AgentInternals['addRequest'] {
  return (req, options) => {
    const onRequest = sendingCall;
    sendingCall = undefined;
    onRequest?.(req);
    addRequest(req, options);
  };
}

/** Lets the call being sent see its `ClientRequest` as the agent gets it. */
function hooked<A extends http.Agent>(agent: A): A {
  const internals = agent as unknown as AgentInternals;
  const addRequest = internals.addRequest;
  internals.addRequest = seeingRequest((req, options) => addRequest.call(agent, req, connectionOptions(options)));
  return agent;
}

/** Request options the agent never needs to open or pool a connection: node-fetch's parsed URL, the request line and headers. */
const REQUEST_ONLY_OPTIONS = new Set(['href', 'path', 'pathname', 'search', 'query', 'hash', 'slashes', 'auth', 'protocol', 'method', 'headers', 'agent']);

/**
 * The request's options without {@link REQUEST_ONLY_OPTIONS}. The agent copies what it gets into
 * a dictionary-mode object that the socket's pool listeners keep for the socket's lifetime: with
 * node-fetch's ~20 URL and request fields and a copy of the headers, about 1.7 KB per upstream
 * socket; this keeps only the connection's (host, port, family, timeout, TLS fields, ...).
 * With the agent's own and the ones it adds, a plain HTTP socket's copy has 11 entries: V8 sizes
 * such a dictionary for 16, and for 32 from the 12th (384 B more per upstream socket), so no
 * option that the agent gets its default for is passed.
 */
function connectionOptions(options: unknown): unknown {
  if (typeof options !== 'object' || options === null) return options;
  const out: Record<string, unknown> = {};
  // `ClientRequest` has set `host` from `hostname`: the agent and net.connect() read `host`.
  const hostSet = typeof (options as { host?: unknown }).host === 'string';
  for (const key of Object.keys(options)) {
    if (!REQUEST_ONLY_OPTIONS.has(key) && !(hostSet && key === 'hostname')) out[key] = (options as Record<string, unknown>)[key];
  }
  return out;
}

/**
 * The descriptor of a connected socket or a listening server (`undefined` before it connects or
 * listens, once it closed, on Windows, or for a socket that is not TCP). Node exposes none: `_handle.fd`, or for a TLS
 * socket the TCP handle under its `TLSWrap` (`_handle._parent.fd`).
 */
export function socketFd(socket: Socket | net.Server): number | undefined {
  const handle = (socket as unknown as { _handle?: { fd?: unknown; _parent?: { fd?: unknown } } | null })._handle;
  const fd = typeof handle?.fd === 'number' ? handle.fd : handle?._parent?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** The server that accepted `socket` (Node's `socket.server`, set as it accepts; not documented), if any. */
export const acceptedBy = (socket: Socket): net.Server | undefined => (socket as { server?: net.Server | null }).server ?? undefined;

type ConnectionFactory = { createConnection(...args: unknown[]): unknown };

/** Bounds each socket the agent opens (its `createConnection`, net's or tls's) once it connects. */
function boundedReceive<A extends http.Agent>(agent: A): A {
  const internals = agent as unknown as ConnectionFactory;
  const createConnection = internals.createConnection;
  internals.createConnection = function (this: http.Agent, ...args: unknown[]): unknown {
    const socket = createConnection.apply(this, args);
    const bytes = upstreamReceiveBytesSetting();
    if (bytes > 0 && socket instanceof net.Socket) socket.once('connect', () => setSocketOption(socket, 'receiveBuffer', bytes));
    return socket;
  };
  return agent;
}

/** No bound on the agent's sockets per host, whatever `http.Agent.defaultMaxSockets` says. */
function unlimited<A extends http.Agent>(agent: A): A {
  agent.maxSockets = Infinity;
  return agent;
}

/** Keep-alive agents used only for upstream calls, separate from any other HTTP use. */
const agents = {
  http: boundedReceive(hooked(unlimited(
    new http.Agent({
      keepAlive: true,
      // maxSockets is set on the agent (unlimited), not passed: it would be copied into every socket's options.
      // Passed to net.createConnection(): the socket's read path (above) and its high-water mark.
      ...({ readableHighWaterMark: UPSTREAM_HIGH_WATER_MARK, onread: { buffer: nextReadBuffer, callback: onUpstreamRead } } as object),
    }),
  ))),
  // tls.connect() takes `highWaterMark` (both directions); its `onread` is left alone.
  https: boundedReceive(hooked(new https.Agent({ keepAlive: true, maxSockets: Infinity, ...({ highWaterMark: UPSTREAM_HIGH_WATER_MARK } as object) }))),
};

/**
 * node-fetch 2 hands out `res.pipe(new PassThrough())` as the body: one more stream with 16 KiB
 * buffers on each side, per upstream stream. Its first `pipe()` on the response gets the response
 * itself back instead, so the body is the `IncomingMessage`; a compressed body is then piped, for
 * real, into zlib by node-fetch's second `pipe()`.
 *
 * Except for `deflate`: node-fetch pipes the response into a second stream too, peeks at its
 * first chunk to choose between zlib-wrapped and raw inflate, and only then pipes the body into
 * zlib. The body must have held that first chunk meanwhile, so it stays node-fetch's
 * `PassThrough` (its bytes are not counted in the call's buffered bytes; a compressed body's
 * reads are not sized either).
 */
export function bodyIsResponse(res: http.IncomingMessage): void {
  // node-fetch 2's own test of the header, as it spells it.
  const encoding = res.headers['content-encoding'];
  if (encoding === 'deflate' || encoding === 'x-deflate') return;
  (res as { pipe: unknown }).pipe = function pipeOnce(this: http.IncomingMessage): http.IncomingMessage {
    Reflect.deleteProperty(this, 'pipe');
    return this;
  };
}

/** An absolute URL whose scheme is `https` (any case, after the C0 controls and spaces the URL parser strips). */
const HTTPS_URL = /^[\x00-\x20]*https:/i;

/** Picks the keep-alive agent for a URL (a string is not parsed: its scheme decides). */
export function upstreamAgent(url: URL | string): http.Agent {
  const https = typeof url === 'string' ? HTTPS_URL.test(url) : url.protocol === 'https:';
  return https ? agents.https : agents.http;
}

/** Hooked views of callers' own agents, one per agent. */
const views = new WeakMap<http.Agent, http.Agent>();

/**
 * The agent a call sends through: {@link upstreamAgent} for the URL, or, for a caller's own
 * `agent`, a view of it (`Object.create(agent)`) whose `addRequest` lets the call see its
 * `ClientRequest` (connect timer, response) and then hands the request to the caller's agent
 * itself: its pool, sockets and options stay the caller's, and the caller's object is not
 * changed. Reads of such sockets are not sized (that is the upstream agent's `onread`).
 * Relies on `ClientRequest` calling nothing of its agent but `addRequest` and reading a few
 * properties (`defaultPort`, `protocol`, `keepAlive`, `maxSockets`), which the view inherits.
 */
export function callAgent(url: URL | string, agent?: http.Agent): http.Agent {
  if (agent === undefined) return upstreamAgent(url);
  let view = views.get(agent);
  if (view === undefined) {
    const target = agent as unknown as AgentInternals;
    view = Object.create(agent) as http.Agent;
    (view as unknown as AgentInternals).addRequest = seeingRequest((req, options) => target.addRequest.call(agent, req, options));
    views.set(agent, view);
  }
  return view;
}

/**
 * The abort signal node-fetch watches for one call, and the gateway's per-stream signal (every
 * watcher of it uses only what node-fetch uses). node-fetch 2 uses only `aborted` and
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

/** The socket and bytes of the read being handed to the HTTP parser now (inside `onUpstreamRead`'s emit). */
let readingSocket: Socket | undefined, readingBytes: Buffer | undefined;

/** Runs around each read of a socket: `beforeParse` gets its bytes (reused after the read), `afterParse` runs once the HTTP parser went through them. */
export interface ReadHook {
  beforeParse(bytes: Buffer): void;
  afterParse(): void;
  /** After the socket's next read was sized (`SizedReadCall.nextReadBytes`), on sockets whose reads are sized. */
  afterSized?(): void;
}

const kReadHook = Symbol('tidegate.readHook');
type Hooked = Socket & { [kReadHook]?: ReadHook | undefined; parser?: ParserInternals | null };

/** Runs `hook` around every later read of `socket` (plain HTTP upstream sockets only; `undefined` ends it). */
export function setReadHook(socket: Socket, hook: ReadHook | undefined): void {
  (socket as Hooked)[kReadHook] = hook;
}

/** The bytes of the read the HTTP parser is going through now on `socket`, when called from inside it (e.g. a `'response'` listener). */
export function readBeingParsed(socket: Socket): Buffer | undefined {
  return socket === readingSocket ? readingBytes : undefined;
}

/** The parts of Node's `HTTPParser` (lib/_http_common.js) {@link muteBodyCallbacks} touches. */
type ParserInternals = Record<number, unknown> & { incoming: http.IncomingMessage | null };

/** The parser's callback slots (`HTTPParser.kOnBody`, `kOnHeadersComplete`), found once by the names Node gives its callbacks. */
let slots: { body: number; headers: number; onBody: unknown } | null | undefined;
function parserSlots(parser: ParserInternals): typeof slots {
  const at = (name: string): number => Array.from({ length: 16 }, (_, i) => parser[i]).findIndex((f) => typeof f === 'function' && f.name === name);
  if (slots !== undefined) return slots;
  const [body, headers] = [at('parserOnBody'), at('parserOnHeadersComplete')];
  slots = body < 0 || headers < 0 ? null : { body, headers, onBody: parser[body] };
  return slots;
}

/** A parser whose body callback is off: `restore()` gives it back (idempotent); `readsResponse()` is false once the parser left the response (ended, freed). */
export interface MutedParser {
  restore(): void;
  readsResponse(): boolean;
}

/**
 * Empties the body callback slot of the HTTP parser reading `res` (Node's `parserOnBody` then
 * neither copies an HTTP chunk into a Buffer nor calls into JS for it; the parser still frames
 * every byte). The callback comes back with {@link MutedParser.restore}, when the socket closes,
 * and in any case before the next message this parser reads (kept alive, or taken from Node's
 * pool) reaches its body. `undefined` when the parser's slots cannot be found (another Node).
 */
export function muteBodyCallbacks(res: http.IncomingMessage): MutedParser | undefined {
  const socket = res.socket as Hooked | null;
  const parser = socket?.parser;
  if (socket == null || parser == null || parser.incoming !== res) return undefined;
  const found = parserSlots(parser);
  if (found == null || parser[found.body] !== found.onBody) return undefined;
  const onHeadersComplete = parser[found.headers] as (...args: unknown[]) => unknown;
  const restore = (): void => {
    socket.off('close', restore);
    if (parser[found.headers] === nextHeaders) [parser[found.body], parser[found.headers]] = [found.onBody, onHeadersComplete];
  };
  const nextHeaders = (...args: unknown[]): unknown => {
    restore();
    return onHeadersComplete.apply(parser, args);
  };
  parser[found.body] = undefined;
  parser[found.headers] = nextHeaders;
  socket.on('close', restore); // restore() removes it (a once wrapper would stay with the stream)
  return { restore, readsResponse: () => parser.incoming === res };
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

/** Stands in for node-fetch's `'error'` listener: Node emits a socket error on the request too (unheard, it would throw). */
const ignoreRequestError = (): void => undefined;

/**
 * Drops what node-fetch 2 registered for one call once its `Response` is in hand and its body is
 * the `IncomingMessage` itself (no zlib): its listeners on `req` and `res` added since the marks
 * (its `'response'` and `'error'` handlers, its abort-listener removal, its premature-close check,
 * its `Body`'s error store) and its `'abort'` listener on `signal`. They share `fetch()`'s scope,
 * which holds the `Request`, its headers and body, the parsed URL and the request options.
 * node-fetch then no longer sees the signal: the caller aborts by destroying `req` and the body.
 * A socket error still reaches the body: Node destroys an unfinished response when its socket closes.
 */
export function releaseFetchListeners(req: http.ClientRequest, reqMark: ListenerMark, res: http.IncomingMessage, resMark: ListenerMark, signal: InstanceType<typeof CallSignal>): void {
  dropListenersSince(req, reqMark);
  dropListenersSince(res, resMark);
  if (req.listenerCount('error') === 0) req.on('error', ignoreRequestError);
  signal.listeners = undefined;
}

let kOutHeaders: symbol | null | undefined; // Node's key of a request's header map, looked up once (`null`: not found)
/**
 * Drops the header map of a request whose head was written (`_header` set, and kept): Node reads it
 * after that only for `getHeader()` and kin, which then answer as without headers. ~600 B per held stream.
 */
export function dropSentHeaders(req: http.ClientRequest): void {
  if (typeof (req as { _header?: unknown })._header !== 'string') return;
  if (kOutHeaders === undefined) kOutHeaders = Object.getOwnPropertySymbols(req).find((s) => s.description === 'kOutHeaders') ?? null;
  if (kOutHeaders !== null) (req as unknown as Record<symbol, unknown>)[kOutHeaders] = null;
  dropWrittenHead(req);
}

/** Stands in for a written head: Node only tests it for truth once it was sent. */
const WRITTEN_HEAD = 'HTTP head written\r\n\r\n';
/**
 * Replaces the head string a request or response keeps once it was written (`_header`, ~250 B
 * per held stream) with a shared one: after `_headerSent`, Node reads `_header` only as a boolean
 * (`headersSent`, the guards that throw `ERR_HTTP_HEADERS_SENT`). A response keeps its header
 * map: logging middleware reads it when the response finishes (`res.getHeaders()`).
 */
export function dropWrittenHead(msg: http.OutgoingMessage): void {
  const m = msg as unknown as { _header?: unknown; _headerSent?: unknown };
  if (m._headerSent === true && typeof m._header === 'string') m._header = WRITTEN_HEAD;
}

const NO_HEADERS: http.IncomingHttpHeaders = Object.freeze(Object.create(null) as http.IncomingHttpHeaders);
const NO_RAW_HEADERS: string[] = Object.freeze([]) as unknown as string[];
/**
 * Drops the header map and raw headers of a response whose head was read (by node-fetch, into its
 * own `Headers`, and by the caller): `headers` and `rawHeaders` then read as empty. Trailers are
 * kept apart (`trailers`, `rawTrailers`). ~500 B per held stream.
 */
export function dropReceivedHeaders(res: http.IncomingMessage): void {
  res.headers = NO_HEADERS;
  res.rawHeaders = NO_RAW_HEADERS;
}

/**
 * Makes node-fetch's gunzip of a response `body` fail when the gzip stream ends before its last
 * block (Node's `Z_BUF_ERROR`, "unexpected end of file"), as its inflate and brotli decoders
 * already do. node-fetch 2 gunzips with `finishFlush: Z_SYNC_FLUSH`, which takes a cut stream's
 * end for a flush and ends the body short without an error; Node's zlib streams keep that flag in
 * `_finishFlushFlag` and read it when they process their last chunk. Any other body is left as it is.
 */
export function strictGzipEnd(body: unknown): void {
  if (!(body instanceof zlib.Gunzip)) return;
  const gunzip = body as unknown as { _finishFlushFlag?: unknown };
  if (typeof gunzip._finishFlushFlag === 'number') gunzip._finishFlushFlag = zlib.constants.Z_FINISH;
}
