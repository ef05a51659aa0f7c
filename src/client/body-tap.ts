import { Flow } from '../flow/flow';
import type { Subscription } from '../flow/types';

const BOM = [0xef, 0xbb, 0xbf];
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
 * @internal Reports each chunk (idle timer) and, on a reconnect, seeds the new parser with the last event
 * ID: `id: <last>\n` is prepended to the first chunk, after stripping a leading BOM (which the
 * parser only recognises at the very start). So events of the new connection carry the resumed
 * ID until the server sends another, as browsers' EventSource does. One chunk in, one chunk out,
 * until a drain starts (`tap.drainEnded` set): then chunks are dropped, the end goes to the tap,
 * and only the session cancels the body (through `tap.body`).
 */
export function tapBytes(source: Flow<Uint8Array>, onChunk: () => void, seedId: string, tap: BodyTap): Flow<Uint8Array> {
  return new Flow<Uint8Array>((actual, context) => {
    let head: Buffer | undefined = seedId === '' ? undefined : Buffer.alloc(0);
    const seed = Buffer.from(`id: ${seedId}\n`);
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
          if (head === undefined) {
            actual.onNext(chunk);
            return;
          }
          head = Buffer.concat([head, chunk]);
          const n = Math.min(head.length, BOM.length);
          let isBomPrefix = true;
          for (let i = 0; i < n; i++) if (head[i] !== BOM[i]) isBomPrefix = false;
          if (isBomPrefix && head.length < BOM.length) {
            actual.onNext(new Uint8Array(0)); // wait for the rest of a possible BOM
            return;
          }
          const rest = isBomPrefix ? head.subarray(BOM.length) : head;
          head = undefined;
          actual.onNext(Buffer.concat([seed, rest]));
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
