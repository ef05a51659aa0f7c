import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ByteBudget } from '../flow/budget';
import type { Flow } from '../flow/flow';
import { sendFlow, sendHttpError, type BridgeElement, type SendFlowOptions } from './send-flow';

/** What an {@link sse} handler receives besides the request. */
export interface SseHandlerContext {
  /** The `Last-Event-ID` request header, `''` when absent (WHATWG HTML §9.2: `lastEventId`). */
  lastEventId: string;
  /** Aborted when the client leaves or the stream ends early: pass it to `fetch`. */
  signal: AbortSignal;
  /** The stream's byte budget: give it to `onBackpressureBuffer({ budget })` so chain buffers and socket bytes share one account. */
  budget: ByteBudget;
}

/** Builds the stream for one request; may be async (e.g. wait for the upstream's 200 first). */
export type SseHandler = (req: Request, context: SseHandlerContext) => Flow<BridgeElement> | Promise<Flow<BridgeElement>>;

/**
 * Express middleware serving `handler`'s Flow as Server-Sent Events through the demand bridge
 * ({@link sendFlow}): the flow is subscribed with demand, never compressed, and cancelled when
 * the client leaves. A handler that throws or rejects before the stream started gets a normal
 * HTTP error (`error.status` or 500, JSON `{error:{code,message}}`).
 *
 * @example
 * app.get('/ticks', sse((req, { signal }) => ticks(signal).pipe(map((n) => ({ data: String(n) })))));
 */
export function sse(handler: SseHandler, options: SendFlowOptions = {}): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    const controller = new AbortController();
    const budget = options.budget ?? new ByteBudget(options.maxBufferedBytes ?? 256 * 1024);
    const abort = (): void => controller.abort();
    res.once('close', abort);
    const context: SseHandlerContext = { lastEventId: req.get('last-event-id') ?? '', signal: controller.signal, budget };
    Promise.resolve()
      .then(() => handler(req, context))
      .then(
        (flow) => {
          if (controller.signal.aborted) return;
          const handle = sendFlow(res, flow, { ...options, budget });
          void handle.done.then(() => {
            res.off('close', abort);
            controller.abort();
          });
        },
        (err: unknown) => {
          res.off('close', abort);
          if (res.headersSent) return next(err);
          sendHttpError(res, err);
        },
      );
  };
}
