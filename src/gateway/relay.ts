import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Flow } from '../flow/flow';
import { sendFlow, sendHttpError, type BridgeElement, type SendFlowOptions, type StreamResult } from '../express/bridge';
import { sseDecode, type SseEvent, type SseEventInit } from '../sse';
import { UpstreamHttpError } from '../upstream/errors';
import { openUpstreamStream, type UpstreamRequest } from '../upstream/request';
import type { Logger } from './logger';

/** Per-route settings of {@link relaySse}. */
export interface RelayOptions {
  /** Route label for logs and metrics, e.g. `openai.chat`. */
  route: string;
  logger: Logger;
  /** Bridge options (budget, prefetch, heartbeat, stall timeout). */
  stream: SendFlowOptions;
  /** Builds the upstream request from the client request; URL comes from config only. */
  upstream: (req: Request) => Omit<UpstreamRequest, 'signal'>;
  /** Maps decoded upstream events to what the client gets (default: re-encode as received). */
  transform?: (events: Flow<SseEvent>) => Flow<BridgeElement>;
  /** Max bytes of one upstream SSE event (default 1 MiB). */
  maxEventBytes?: number;
}

/**
 * Relays one upstream SSE stream to one client through the whole signal chain:
 * node-fetch body → `fromReadable` → `sseDecode` → transform → `sendFlow`. Headers are
 * committed only after the upstream answered 200 with `text/event-stream`, so an upstream HTTP
 * error reaches the client as an HTTP error with the upstream's status and body.
 */
export async function relaySse(req: Request, res: Response, options: RelayOptions): Promise<StreamResult | undefined> {
  const streamId = randomUUID();
  const started = performance.now();
  const controller = new AbortController();
  const onClose = (): void => controller.abort(new Error('client closed'));
  res.once('close', onClose);
  const log = (fields: Record<string, unknown>): void => {
    options.logger.info('stream', { streamId, route: options.route, ...fields });
  };
  try {
    const upstream = await openUpstreamStream({ ...options.upstream(req), signal: controller.signal });
    const events = upstream.body.pipe(sseDecode({ maxEventBytes: options.maxEventBytes }));
    const flow = (options.transform ?? reencode)(events);
    const handle = sendFlow(res, flow, options.stream);
    const result = await handle.done;
    log({
      status: 200,
      outcome: result.outcome,
      ttftMs: round(result.ttftMs),
      durationMs: round(result.durationMs),
      events: result.events,
      bytes: result.bytes,
      peakBufferedBytes: result.peakBufferedBytes,
      errorCode: (result.error as { code?: string } | undefined)?.code,
    });
    return result;
  } catch (err) {
    if (controller.signal.aborted) {
      log({ status: 499, outcome: 'client_closed', durationMs: round(performance.now() - started) });
      return undefined;
    }
    if (err instanceof UpstreamHttpError) {
      res.status(err.status);
      if (err.contentType) res.setHeader('Content-Type', err.contentType);
      res.end(err.body);
    } else sendHttpError(res, err);
    log({ status: res.statusCode, outcome: 'upstream_error', errorCode: (err as { code?: string }).code, durationMs: round(performance.now() - started) });
    return undefined;
  } finally {
    res.off('close', onClose);
  }
}

/** Re-encodes decoded events as received: `event` only when not `message`, `id` only when it changed. */
export function reencode(events: Flow<SseEvent>): Flow<BridgeElement> {
  let lastId = '';
  return mapFlow(events, (e): BridgeElement => {
    const out: SseEventInit = { data: e.data };
    if (e.type !== 'message') out.event = e.type;
    if (e.lastEventId !== lastId) {
      lastId = e.lastEventId;
      out.id = e.lastEventId;
    }
    return out;
  });
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}

import { Flow as FlowClass } from '../flow/flow';
function mapFlow<A, B>(source: Flow<A>, fn: (a: A) => B): Flow<B> {
  return new FlowClass<B>((actual, context) =>
    source.subscribeWith(
      {
        onSubscribe: (s) => actual.onSubscribe(s),
        onNext: (v) => actual.onNext(fn(v)),
        onError: (e) => actual.onError(e),
        onComplete: () => actual.onComplete(),
      },
      context,
    ),
  );
}
