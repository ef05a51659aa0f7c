import type { IncomingHttpHeaders } from 'node:http';

/**
 * The client credential a request carries: the token of `Authorization: Bearer <token>`, else
 * the value of `x-api-key`, else an `Authorization` of another scheme as a whole (`Basic …`);
 * `undefined` when it carries none. One credential is the same
 * whichever of the two headers carries it (`Authorization: Bearer K` and `x-api-key: K` are one
 * client), as the OpenAI and Anthropic APIs each accept one of them.
 */
export function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)/i.exec(auth);
    if (m) return m[1];
  }
  const key = headers['x-api-key'];
  const k = Array.isArray(key) ? key[0] : key;
  if (k !== undefined && k !== '') return k;
  return auth !== undefined && auth !== '' ? auth : undefined;
}
