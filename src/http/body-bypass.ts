import type http from 'node:http';
import { bodyStart, framingOf, type BodyFraming } from './body-framing';
import { muteBodyCallbacks, readBeingParsed, setReadHook, UPSTREAM_MAX_READ_BYTES, type MutedParser, type ReadHook } from './node-hooks';

/** Where a read's body bytes are gathered before they are copied into a chunk of their own. */
const scratch = Buffer.allocUnsafeSlow(UPSTREAM_MAX_READ_BYTES);

/** Body chunks from this size on are lent out of a buffer that goes back to {@link free} once released. */
const LEND_MIN_BYTES = 16 * 1024;

/** Lendable buffers are allocated in multiples of this many bytes: reads of a stream vary by a few bytes, and one a byte larger than every free buffer fits none. */
const LEND_ROUND_BYTES = 4 * 1024;

/** `bytes` rounded up to a multiple of {@link LEND_ROUND_BYTES}. */
function roundUp(bytes: number): number {
  return Math.ceil(bytes / LEND_ROUND_BYTES) * LEND_ROUND_BYTES;
}

/** Most buffers {@link free} keeps. */
const FREE_MAX = 8;

/** Most lent buffers a response keeps until its consumer releases them (older ones are left to the collector). */
const HELD_MAX = 4;

/**
 * Buffers of body chunks whose views are all gone (their consumer said so: `released`), taken by
 * later reads' bodies of any stream instead of new allocations. A read takes the smallest one
 * its bytes fit in; at most {@link FREE_MAX}, the largest ones given back.
 */
const free: Buffer[] = [];

/** The index in {@link free} of the smallest buffer of at least `bytes`, or -1. */
function freeFitting(bytes: number): number {
  let best = -1;
  for (let i = 0; i < free.length; i++) if (free[i].length >= bytes && (best < 0 || free[i].length < free[best].length)) best = i;
  return best;
}

/** Puts `buffer` in {@link free}; a full list keeps the larger buffers (a small one fits fewer reads). */
function giveBack(buffer: Buffer): void {
  if (free.length < FREE_MAX) return void free.push(buffer);
  let smallest = 0;
  for (let i = 1; i < free.length; i++) if (free[i].length < free[smallest].length) smallest = i;
  if (free[smallest].length < buffer.length) free[smallest] = buffer;
}

/** Takes `free[i]` out of the list. */
function takeFree(i: number): Buffer {
  const buffer = free[i];
  const last = free.pop() as Buffer;
  if (i < free.length) free[i] = last;
  return buffer;
}

/**
 * Takes the body of `res` off Node's HTTP parser callbacks: the parser goes on framing every
 * byte (chunk sizes, the end of the body, keep-alive, errors), but no longer copies each HTTP
 * chunk into a Buffer and calls into JS for it ({@link muteBodyCallbacks}). Before the parser
 * goes through a socket read, {@link BodyFraming} copies that read's body bytes out of it, and
 * the response gets them as one chunk (one `push()`, one `'data'`). An LLM server writes one
 * event per HTTP chunk, often a hundred to a read: they then cost one pass through the relay.
 *
 * Only where every byte is known: a response whose head arrived whole at the start of the read
 * being parsed (status and header count checked against the parser's), on a plain-HTTP upstream
 * socket (one that reads through node-hooks' `onread`), with a `chunked` or `Content-Length`
 * body, not to a `HEAD`. Otherwise returns `false` and the parser delivers the body as before.
 * Must be called from the request's `'response'` listener. `onRead` is called after each read
 * went through the parser, its body bytes pushed.
 *
 * `released`, when given, is asked before a read's body is pushed and once the next read of the
 * socket was sized (the read's bytes went as far down the chain as they go synchronously, the
 * consumer flushed what it batched): `true` promises that no view of any body chunk pushed so
 * far is held anywhere any longer. The buffers of the response's chunks of at least 16 KiB
 * pushed since the last `true` (the last four of them) then go to a process-wide free list and
 * take later reads' bodies, of this response or another, instead of waiting for V8 to collect
 * them; a wrong `true` would let such a read overwrite bytes still held. Without `released`
 * every chunk is a new allocation.
 *
 * If the decoder and the parser disagree on where the body ends, or the decoder does not
 * understand framing the parser accepted, the response and its socket are destroyed with an
 * `ECONNRESET` error: never a short body without an error, even where the parser already
 * completed the message.
 */
export function bypassBodyCallbacks(res: http.IncomingMessage, method: string, onRead?: () => void, released?: () => boolean): boolean {
  const socket = res.socket;
  const bytes = socket === null ? undefined : readBeingParsed(socket);
  const status = res.statusCode ?? 0;
  if (socket === null || bytes === undefined || method === 'HEAD' || status < 200 || status === 204 || status === 304) return false;
  const framing = framingOf(res);
  const start = framing === undefined ? -1 : bodyStart(bytes, res);
  if (framing === undefined || start < 0) return false;
  const parser = muteBodyCallbacks(res);
  if (parser === undefined) return false;
  const bypass = new BodyBypass(socket, parser, res, framing, onRead, released);
  setReadHook(socket, bypass);
  // The rest of this read, before the parser goes on through it.
  bypass.take(bytes, start);
  return true;
}

/** The error of a socket broken on purpose: its response and request hear of it themselves. */
function ignoreError(): void {}

/** One response whose body bypasses the parser's callbacks (see {@link bypassBodyCallbacks}). */
class BodyBypass implements ReadHook {
  /** The buffer of the last chunk pushed, until {@link hold} moves it to {@link held}. */
  private lent: Buffer | undefined;
  /** Buffers of chunks pushed and not released yet, oldest first (at most {@link HELD_MAX}). */
  private held: Buffer[] | undefined;

  constructor(
    private readonly socket: import('node:net').Socket,
    private readonly parser: MutedParser,
    private readonly res: http.IncomingMessage,
    private readonly framing: BodyFraming,
    private readonly onRead: (() => void) | undefined,
    private readonly released: (() => boolean) | undefined,
  ) {}

  beforeParse(bytes: Buffer): void {
    this.take(bytes, 0);
  }

  /** The read's body bytes from `from`, one push. Before the parser, so bytes ahead of a framing error reach the response before the error does. */
  take(bytes: Buffer, from: number): void {
    const need = bytes.length - from;
    // Chunks held at the last read may have been let go since (a lagging client's socket drained).
    this.hold();
    if (this.held !== undefined && this.held.length > 0 && (this.released as () => boolean)()) this.giveBackHeld();
    // A free buffer takes the body directly (no copy out of scratch).
    const fit = this.released === undefined ? -1 : freeFitting(need);
    const reuse = fit < 0 ? undefined : free[fit];
    const out = reuse ?? (need <= scratch.length ? scratch : Buffer.allocUnsafe(need));
    const n = this.framing.decode(bytes, from, bytes.length, out, 0);
    const { res } = this;
    if (n === 0 || res.destroyed) return;
    let body: Buffer;
    if (reuse !== undefined && n * 2 > reuse.length) {
      // Lent: the chunk is a view of the free buffer (at most twice its bytes held by its views).
      this.lent = takeFree(fit);
      body = n === reuse.length ? reuse : reuse.subarray(0, n);
    } else if (this.released !== undefined && n >= LEND_MIN_BYTES && n * 2 > roundUp(need)) {
      // Lendable: as large as the read, rounded up, so that it can take a read's body like this one or a little larger.
      const buffer = Buffer.allocUnsafeSlow(roundUp(need));
      buffer.set(out.subarray(0, n));
      this.lent = buffer;
      body = n === buffer.length ? buffer : buffer.subarray(0, n);
    } else {
      body = Buffer.allocUnsafe(n);
      body.set(n === out.length ? out : out.subarray(0, n));
    }
    // As Node's parserOnBody: a full response stops reading its socket until it is read.
    if (!res.push(body)) this.socket.pause();
  }

  /** The read's bytes went as far as they go: if the consumer released every chunk, their buffers go to {@link free}. */
  afterSized(): void {
    this.hold();
    if (this.held !== undefined && this.held.length > 0 && (this.released as () => boolean)()) this.giveBackHeld();
  }

  /** Gives every buffer of {@link held} to {@link free}: `released` just said none of their views is held. */
  private giveBackHeld(): void {
    const held = this.held as Buffer[];
    for (let i = 0; i < held.length; i++) giveBack(held[i]);
    held.length = 0;
  }

  /** Keeps the last chunk's buffer among {@link held} (dropping the oldest beyond {@link HELD_MAX}). */
  private hold(): void {
    const { lent } = this;
    if (lent === undefined) return;
    this.lent = undefined;
    const held = (this.held ??= []);
    if (held.length === HELD_MAX) held.shift();
    held.push(lent);
  }

  /** Ends the bypass with the body; checks that the decoder and the parser agree. */
  afterParse(): void {
    const { framing, res, socket } = this;
    if (!socket.destroyed) {
      if (framing.failure !== undefined) this.break(`upstream body framing not understood (${framing.failure})`);
      else if (framing.done !== res.complete) this.break('upstream body and message ended apart');
    }
    if (res.complete || socket.destroyed || !this.parser.readsResponse()) this.end();
    this.onRead?.();
  }

  private break(reason: string): void {
    this.end();
    const error = Object.assign(new Error(reason), { code: 'ECONNRESET' });
    const { socket, res } = this;
    // The parser may have taken the message as complete (it only pushed the end so far): the
    // response ends with the error instead, and Node's request, which lets a complete answer's
    // socket go, may no longer listen for the socket's error by the time it is emitted.
    socket.on('error', ignoreError);
    if (!res.destroyed) res.destroy(error);
    socket.destroy(error);
  }

  private end(): void {
    this.lent = this.held = undefined;
    setReadHook(this.socket, undefined);
    this.parser.restore();
  }
}
