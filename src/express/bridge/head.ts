import type { ServerResponse } from 'node:http';
import { boundKernelUnsent, kernelUnsentBytesFor } from './kernel-unsent';
import type { SendFlowOptions } from './types';

/**
 * Commits an SSE response's head without sending it: status 200, `Content-Type:
 * text/event-stream; charset=utf-8`, `Cache-Control: no-cache, no-transform`,
 * `X-Accel-Buffering: no` (nginx), `Connection: keep-alive` where the HTTP/1.1 client keeps the
 * connection and no `Connection` header was set, then `options.headers`. After it
 * `res.headersSent` is true, and Node sends the head with the first write (one syscall for the
 * head and the first frame). Also turns Nagle off and
 * bounds the socket's unsent kernel queue (`TCP_NOTSENT_LOWAT`, from `options.kernelUnsentBytes`
 * and the stream's budget of `budgetBytes`). Does nothing when the head was already sent.
 */
export function commitSseHead(res: ServerResponse, options: SendFlowOptions, budgetBytes: number): void {
  if (res.headersSent) return;
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  // Only where the client keeps the connection (a request with `Connection: close` must be
  // honoured) and nobody decided otherwise (a draining gateway's `Connection: close`).
  if (res.req?.httpVersionMajor === 1 && res.shouldKeepAlive && !res.hasHeader('Connection')) res.setHeader('Connection', 'keep-alive');
  for (const [name, value] of Object.entries(options.headers ?? {})) res.setHeader(name, value);
  res.writeHead(200);
  res.socket?.setNoDelay(true);
  boundKernelUnsent(res.socket, kernelUnsentBytesFor(options.kernelUnsentBytes, budgetBytes));
}
