import { Flow } from '../flow/flow';
import type { Subscription } from '../flow/types';

const noop = (): void => undefined;

/**
 * @internal One connection's handle below the decoder: the body's own subscription, and, once a terminal
 * event started the drain, where the body's end goes instead of the decoder.
 */
export interface BodyTap {
  body: Subscription | undefined;
  /** The body signalled its end (EOF or error). */
  ended: boolean;
  /** Set while draining: chunks are dropped and the body's EOF or error is reported here only. */
  drainEnded: (() => void) | undefined;
}

/**
 * @internal Reports each chunk (idle timer) and passes it on, one chunk in, one chunk out, until
 * a drain starts (`tap.drainEnded` set): then chunks are dropped, the end goes to the tap, and
 * only the session cancels the body (through `tap.body`).
 */
export function tapBytes(source: Flow<Uint8Array>, onChunk: () => void, tap: BodyTap): Flow<Uint8Array> {
  return new Flow<Uint8Array>((actual, context) => {
    source.subscribeWith(
      {
        onSubscribe: (s) => {
          tap.body = s;
          // The session releases the body itself (`tap.body`): a cancel from the decoder (a line
          // over the limit after the terminal event, in the same chunk) must not abort a
          // response the drain is about to read to its end.
          actual.onSubscribe({ request: (n) => s.request(n), cancel: noop });
        },
        onNext: (chunk) => {
          if (tap.drainEnded !== undefined) return; // after the terminal event: read and dropped
          onChunk();
          actual.onNext(chunk);
        },
        onError: (e) => {
          tap.ended = true;
          if (tap.drainEnded !== undefined) tap.drainEnded();
          else actual.onError(e);
        },
        onComplete: () => {
          tap.ended = true;
          if (tap.drainEnded !== undefined) tap.drainEnded();
          else actual.onComplete();
        },
      },
      context,
    );
  });
}
