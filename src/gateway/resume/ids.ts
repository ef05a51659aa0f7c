import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { credentialOf } from '../credential';

/** Random bytes of a stream id: 128 bits, so ids cannot be guessed. */
const STREAM_ID_BYTES = 16;
const STREAM_ID = /^[0-9a-f]{32}$/;

/**
 * Random bytes for the next 256 ids, drawn from the CSPRNG in one call (one call per id cost
 * more than the rest of a stream's set-up bookkeeping); each byte is used once.
 */
const idPool = Buffer.alloc(STREAM_ID_BYTES * 256);
let idPoolOffset = idPool.length;

/** A new stream id: 128 random bits (crypto.randomFillSync) as 32 lower-case hex digits. */
export function newStreamId(): string {
  if (idPoolOffset === idPool.length) {
    randomFillSync(idPool);
    idPoolOffset = 0;
  }
  const id = idPool.toString('hex', idPoolOffset, idPoolOffset + STREAM_ID_BYTES);
  idPoolOffset += STREAM_ID_BYTES;
  return id;
}

/** True for a string shaped like a {@link newStreamId} id. */
export function isStreamId(value: string): boolean {
  return STREAM_ID.test(value);
}

/** The SSE `id:` of event `seq` (1-based) of a stream: `<streamId>:<seq>`. */
export function eventId(streamId: string, seq: number): string {
  return `${streamId}:${seq}`;
}

/**
 * Reads an event id written by {@link eventId} (a client's `Last-Event-ID`); `undefined` for
 * anything else (an upstream's own id, a foreign value).
 */
export function parseEventId(value: string | undefined): { streamId: string; seq: number } | undefined {
  if (value === undefined) return undefined;
  const colon = value.lastIndexOf(':');
  if (colon < 0) return undefined;
  const streamId = value.slice(0, colon);
  const digits = value.slice(colon + 1);
  if (!isStreamId(streamId) || !/^\d{1,15}$/.test(digits)) return undefined;
  return { streamId, seq: Number(digits) };
}

/**
 * A SHA-256 hash (hex) of the client credential a request carries ({@link credentialOf}: the
 * Bearer token of `Authorization`, else `x-api-key`), `''` when it carries none. The value is
 * hashed, not the header: `Authorization: Bearer K` and `x-api-key: K` are one credential. Only
 * the hash is kept with a stream, never the credential.
 */
export function credentialHash(headers: IncomingHttpHeaders): string {
  const credential = credentialOf(headers);
  if (credential === undefined) return '';
  return createHash('sha256').update(credential).digest('hex');
}

/** True when `presented` (a {@link credentialHash}) matches the stream's; a stream started without a credential admits any. */
export function credentialMatches(stored: string, presented: string): boolean {
  if (stored === '') return true;
  if (presented.length !== stored.length) return false;
  return timingSafeEqual(Buffer.from(stored), Buffer.from(presented));
}
