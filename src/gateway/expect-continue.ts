import type { IncomingMessage, Server, ServerResponse } from 'node:http';

// RFC 9110 §10.1.1: a client that sends `Expect: 100-continue` waits for `100 Continue` before
// its body. Node answers it as soon as the headers are in, before the gateway has looked at the
// request, so a refusal (413 by length, 415, 429) follows a 100 that invited the upload. The
// gateway's server defers the 100 until a route starts reading the body.

const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * Makes `server` hand requests that expect `100 Continue` to its `'request'` listeners without
 * sending the 100; {@link continueBody} sends it once the body is wanted, as does the first
 * read of the body as a flowing stream (`'resume'`). Without this call Node sends it at once,
 * and {@link continueBody} does nothing.
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(req);
    // A handler that reads the body as a flowing stream (a body parser on another path) asks
    // for it too; once an answer was written, the 100 is never sent.
    req.once('resume', () => continueBody(req, res));
    server.emit('request', req, res);
  });
}

/** Sends the `100 Continue` a request deferred by {@link deferContinue} waits for (once). */
export function continueBody(req: IncomingMessage, res: ServerResponse): void {
  if (!awaitingContinue.delete(req) || res.headersSent) return;
  res.writeContinue();
}
