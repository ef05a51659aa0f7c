import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Requests one connection may have waiting behind the one being answered; the next is refused
 * and the connection closes after that refusal.
 */
export const MAX_WAITING_REQUESTS = 4;

/** Options of {@link inTurn}. */
export interface InTurnOptions {
  /** Requests one connection may have waiting; default {@link MAX_WAITING_REQUESTS}. */
  maxWaiting?: number | undefined;
  /**
   * Answers the first request past `maxWaiting`; it must close the connection after its answer
   * (`Connection: close`). Its answer goes out in turn, after those of the requests ahead.
   */
  refuse(req: IncomingMessage, res: ServerResponse): void;
}

/** One connection's turns: whether a request is being served, and the ones waiting for it. */
interface Turns {
  serving: boolean;
  refusing: boolean;
  readonly waiting: (() => void)[];
}

const turnsOf = new WeakMap<Socket, Turns>();

/**
 * Serves the pipelined requests of one connection strictly in turn (RFC 9112 §9.3.2): request
 * N+1 is passed on only once the answer to request N has finished. Node parses each request as
 * it reads it and hands it to the app at once, though its answer can only be written after the
 * ones ahead; passed on, it would take a stream slot and start upstream work for an answer that
 * waits in memory, and a response still queued when the client leaves never emits `'close'`.
 *
 * ```text
 * socket  : --R1--R2--R3------------------------------
 * next()  : --R1--------------R2-----------R3---------
 * answers : ----[ answer 1 ]-[ answer 2 ]-[ answer 3 ]
 * ```
 *
 * A request whose turn comes after an answer that closes the connection (`Connection: close`,
 * a lingering close), or that arrives once the connection is ending, is never passed on.
 *
 * Demand: reads nothing of a waiting request, not even its body (Node stops reading the socket
 * once a request's unread body passes its high-water mark). At most `maxWaiting` requests wait
 * per connection; the next one is refused (`refuse`) and the connection closes after that
 * answer. Requests parsed after it get a bare 503 that is never sent (the connection closes
 * first); their queued answers count towards Node's own limit on a connection's unsent answers,
 * past which it stops reading the socket.
 *
 * Discard: when the connection closes, the waiting requests are dropped without an answer;
 * Node destroys their `req`s.
 *
 * @example
 * app.use(inTurn({ refuse: (req, res) => admission.refuse(req, res, adapter, pipelineLimitError()) }));
 */
export function inTurn(options: InTurnOptions): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  const maxWaiting = options.maxWaiting ?? MAX_WAITING_REQUESTS;
  return (req, res, next) => {
    const socket = req.socket;
    let turns = turnsOf.get(socket);
    if (turns === undefined) {
      const created: Turns = { serving: false, refusing: false, waiting: [] };
      turnsOf.set(socket, created);
      socket.once('close', () => {
        created.waiting.length = 0;
      });
      turns = created;
    }
    // The connection is ending (an answer closed it, the client left): no answer can be written.
    if (socket.destroyed || !socket.writable) return;
    if (turns.refusing) {
      res.writeHead(503, { Connection: 'close', 'Content-Length': '0' });
      res.end();
      return;
    }
    if (!turns.serving) return serve(socket, turns, res, next);
    if (turns.waiting.length >= maxWaiting) {
      turns.refusing = true;
      options.refuse(req, res);
      return;
    }
    const queued = turns;
    queued.waiting.push(() => serve(socket, queued, res, next));
  };
}

function serve(socket: Socket, turns: Turns, res: ServerResponse, next: () => void): void {
  turns.serving = true;
  const done = (): void => {
    res.off('finish', done);
    res.off('close', done);
    // After every 'finish' listener: Node's own (which hands the socket to the next answer, or
    // ends the connection after `Connection: close`) and a lingering close's have run.
    process.nextTick(() => {
      if (socket.destroyed || !socket.writable) turns.waiting.length = 0;
      const turn = turns.waiting.shift();
      turns.serving = turn !== undefined;
      turn?.();
    });
  };
  res.on('finish', done);
  res.on('close', done);
  next();
}
