/**
 * Whether the `Content-Type` value `contentType` names the media type `essence` (`type/subtype`,
 * given in lower case). Media types are compared case-insensitively and their parameters ignored,
 * whitespace before the `;` included (RFC 9110 §8.3.1, §5.6.6): `TEXT/Event-Stream ; charset=utf-8`
 * is `text/event-stream`. No value, or an empty one, names none.
 *
 * @param contentType the header's value as received (`Headers#get`), `null` or `undefined` when absent
 * @param essence the media type to match, lower case, without parameters
 * @example
 * isMediaType('Text/Event-Stream; charset=utf-8', 'text/event-stream'); // true
 * isMediaType('application/json, text/event-stream', 'text/event-stream'); // false: two values
 */
export function isMediaType(contentType: string | null | undefined, essence: string): boolean {
  if (contentType === undefined || contentType === null) return false;
  const semi = contentType.indexOf(';');
  const type = (semi === -1 ? contentType : contentType.slice(0, semi)).replace(OWS_AROUND, '');
  return type.length === essence.length && type.toLowerCase() === essence;
}

/** Optional whitespace (SP, HTAB) at either end, RFC 9110 §5.6.3. */
const OWS_AROUND = /^[ \t]+|[ \t]+$/g;
