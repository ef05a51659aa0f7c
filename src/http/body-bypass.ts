import type http from 'node:http';
import { bodyStart, framingOf, type BodyFraming } from './body-framing';
import { muteBodyCallbacks, readBeingParsed, setReadHook, UPSTREAM_MAX_READ_BYTES, type MutedParser, type ReadHook } from './node-hooks';

/** Where a read's body bytes are gathered before they are copied into a chunk of their own. */
const scratch = Buffer.allocUnsafeSlow(UPSTREAM_MAX_READ_BYTES);

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
 * If the decoder and the parser disagree on where the body ends, or the decoder does not
 * understand framing the parser accepted, the socket is destroyed (`ECONNRESET`): never a short
 * body without an error.
 */
export function bypassBodyCallbacks(res: http.IncomingMessage, method: string, onRead?: () => void): boolean {
  const socket = res.socket;
  const bytes = socket === null ? undefined : readBeingParsed(socket);
  const status = res.statusCode ?? 0;
  if (socket === null || bytes === undefined || method === 'HEAD' || status < 200 || status === 204 || status === 304) return false;
  const framing = framingOf(res);
  const start = framing === undefined ? -1 : bodyStart(bytes, res);
  if (framing === undefined || start < 0) return false;
  const parser = muteBodyCallbacks(res);
  if (parser === undefined) return false;
  const bypass = new BodyBypass(socket, parser, res, framing, onRead);
  setReadHook(socket, bypass);
  // The rest of this read, before the parser goes on through it.
  bypass.take(bytes, start);
  return true;
}

/** One response whose body bypasses the parser's callbacks (see {@link bypassBodyCallbacks}). */
class BodyBypass implements ReadHook {
  constructor(
    private readonly socket: import('node:net').Socket,
    private readonly parser: MutedParser,
    private readonly res: http.IncomingMessage,
    private readonly framing: BodyFraming,
    private readonly onRead: (() => void) | undefined,
  ) {}

  beforeParse(bytes: Buffer): void {
    this.take(bytes, 0);
  }

  /** The read's body bytes from `from`, one push. Before the parser, so bytes ahead of a framing error reach the response before the error does. */
  take(bytes: Buffer, from: number): void {
    const out = bytes.length - from <= scratch.length ? scratch : Buffer.allocUnsafe(bytes.length - from);
    const n = this.framing.decode(bytes, from, bytes.length, out, 0);
    const { res } = this;
    if (n === 0 || res.destroyed) return;
    const body = Buffer.allocUnsafe(n);
    body.set(n === out.length ? out : out.subarray(0, n));
    // As Node's parserOnBody: a full response stops reading its socket until it is read.
    if (!res.push(body)) this.socket.pause();
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
    this.socket.destroy(Object.assign(new Error(reason), { code: 'ECONNRESET' }));
  }

  private end(): void {
    setReadHook(this.socket, undefined);
    this.parser.restore();
  }
}
