import type { Readable } from 'node:stream';

/**
 * Reads `body` to its end, counting bytes as they arrive, and resolves with them; as soon as the
 * count passes `maxBytes` it calls `onTooLarge(maxBytes)` (which must abort the request, e.g. by
 * destroying the body and its socket) and rejects with what that returns. At most `maxBytes`
 * plus one chunk is ever held. A body that errors rejects with its error.
 *
 * Never `res.text()` / `res.buffer()` on an upstream body: they read without a bound.
 */
export function readBounded(body: Readable, maxBytes: number, onTooLarge: (maxBytes: number) => unknown): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const cleanup = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      bytes += buf.length;
      if (bytes > maxBytes) {
        cleanup();
        chunks.length = 0;
        reject(onTooLarge(maxBytes));
        return;
      }
      chunks.push(buf);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, bytes));
    };
    const onError = (err: unknown): void => {
      cleanup();
      reject(err);
    };
    // Destroyed without an error (an abort elsewhere): nothing more will come.
    const onClose = (): void => {
      if (body.readableEnded) return;
      cleanup();
      reject(new Error('upstream body closed before its end'));
    };
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
  });
}

/**
 * Reads at most the first `maxBytes` of `body` and resolves with them: at the end of the body, or
 * as soon as `maxBytes` arrived (the rest is left unread; the caller releases the body). Holds at
 * most `maxBytes` plus one chunk. A body that errors, or closes before its end, rejects.
 */
export function readCapped(body: Readable, maxBytes: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const cleanup = (): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      body.pause();
    };
    const done = (): void => {
      cleanup();
      const all = Buffer.concat(chunks, bytes);
      resolve(all.length > maxBytes ? all.subarray(0, maxBytes) : all);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(buf);
      bytes += buf.length;
      if (bytes >= maxBytes) done();
    };
    const onEnd = (): void => done();
    const onError = (err: unknown): void => {
      cleanup();
      reject(err);
    };
    const onClose = (): void => {
      if (body.readableEnded) return;
      cleanup();
      reject(new Error('body closed before its end'));
    };
    if (maxBytes <= 0) return done();
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
  });
}
