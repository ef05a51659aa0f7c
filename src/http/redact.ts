/**
 * What the gateway removes from anything an upstream sends before a client sees it: the
 * configured credentials (and, in error messages, the parts of the upstream URL), replaced by
 * {@link REDACTED}.
 */

/** What a scrubbed secret is replaced by. */
export const REDACTED = '[redacted]';

/**
 * Shortest secret scrubbed, characters: a shorter value (a test key `x`) would rewrite ordinary
 * text. Real API keys are far longer.
 */
export const MIN_SECRET_LENGTH = 8;

/** Headers whose values are credentials: their values (and the token after `Bearer `/`Basic `) are secrets. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key']);

/**
 * Replaces each of a fixed set of secrets (exact, case-sensitive substrings) by
 * {@link REDACTED}, as given and as `JSON.stringify` spells it inside a string. A secret spelt
 * otherwise (other JSON escapes, split across two events) is not found, except by
 * {@link Scrubber.json}, which reads every JSON escape. Without secrets every method returns its
 * input at the cost of one length check.
 */
export class Scrubber {
  /** The secrets as given (of at least the minimum length). */
  private readonly secrets: readonly string[];
  /**
   * What the methods scan for ({@link Spellings}), made on first use: a stream's error scrubber
   * (its credentials and its upstream URL's parts) is read only if the stream fails.
   */
  private spellings: Spellings | undefined;
  /** {@link Spellings.buffers} spelt in UTF-16 and UTF-32, with {@link REDACTED} spelt the same way; made on first use. */
  private wide: readonly { secret: Buffer; replacement: Buffer }[] | undefined;

  constructor(secrets: Iterable<string | undefined>, minLength = MIN_SECRET_LENGTH) {
    const unique = new Set<string>();
    for (const s of secrets) if (s !== undefined && s.length >= minLength) unique.add(s);
    this.secrets = [...unique];
  }

  /** True when there is at least one secret to scrub. */
  get active(): boolean {
    return this.secrets.length > 0;
  }

  /** The {@link Spellings} of the secrets (made once). */
  private get spelled(): Spellings {
    return (this.spellings ??= spellingsOf(this.secrets));
  }

  /** `text` with every secret replaced. */
  string(text: string): string {
    if (this.secrets.length === 0) return text;
    for (const secret of this.spelled.strings) if (text.includes(secret)) text = text.split(secret).join(REDACTED);
    return text;
  }

  /**
   * `json` (a JSON text, whole or cut short) with every secret replaced, also where JSON escapes
   * spell it (`\u0073k-…`, `http:\/\/host`, `\u0022` for a quote, `\ud83d\ude00` for an emoji, as
   * PHP's, Go's and hand-rolled encoders write): when a secret shows only once the escapes are
   * written as `JSON.stringify` would (the same JSON value), the text comes back so written, with
   * the secret replaced; otherwise as {@link string} returns it, byte for byte.
   */
  json(json: string): string {
    if (!this.active || !json.includes('\\')) return this.string(json);
    const canonical = json.replace(JSON_ESCAPE, canonicalEscape);
    const scrubbed = canonical === json ? canonical : this.string(canonical);
    return scrubbed === canonical ? this.string(json) : scrubbed;
  }

  /** `bytes` itself when it holds no secret (one `Buffer#indexOf` per secret), else a copy with each replaced. */
  buffer(bytes: Buffer): Buffer {
    if (this.secrets.length === 0) return bytes;
    const { buffers } = this.spelled;
    for (let k = 0; k < buffers.length; k++) {
      if (bytes.indexOf(buffers[k]) !== -1) return Buffer.from(this.string(bytes.toString('utf8')));
    }
    return bytes;
  }

  /**
   * `bytes` itself when it holds no secret spelt in UTF-16LE, UTF-16BE, UTF-32LE or UTF-32BE (at
   * any offset), else a copy with each replaced by {@link REDACTED} spelt the same way. For a
   * body already scrubbed in the charset its `Content-Type` names, whose bytes may still be in
   * another: a UTF-16 body labelled UTF-8 or ISO-8859-1, which a reader that follows its byte
   * order mark, or drops its NULs, reads in clear. One `Buffer#indexOf` per secret and spelling.
   */
  wideBytes(bytes: Buffer): Buffer {
    this.wide ??= this.spelled.buffers.flatMap((b) => wideSpellings(b.toString('utf8'), REDACTED));
    let out = bytes;
    for (const { secret, replacement } of this.wide) {
      let at = out.indexOf(secret);
      if (at === -1) continue;
      const parts: Buffer[] = [];
      let from = 0;
      for (; at !== -1; at = out.indexOf(secret, from)) {
        parts.push(out.subarray(from, at), replacement);
        from = at + secret.length;
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }

  /** A scrubber with this one's secrets and `more`'s (one of the two itself when the other has none). */
  with(more: Scrubber): Scrubber {
    if (!more.active) return this;
    if (!this.active) return more;
    return new Scrubber([...this.secrets, ...more.secrets], 1);
  }
}

/** What a {@link Scrubber} scans for. */
interface Spellings {
  /**
   * Each secret and its spelling inside a JSON string (`JSON.stringify`'s: a quote, a backslash,
   * a control character or a lone surrogate is escaped there), longest first, so a secret that
   * contains another is replaced whole (`127.0.0.1:8080` before `127.0.0.1`).
   */
  readonly strings: readonly string[];
  /**
   * What `Scrubber#buffer` scans for: the strings none of which contains another (`Bearer sk-…`
   * goes when `sk-…` is there too: whatever holds the first holds the second), one scan each.
   */
  readonly buffers: readonly Buffer[];
}

/** The {@link Spellings} of `secrets`. */
function spellingsOf(secrets: readonly string[]): Spellings {
  const spellings = new Set(secrets);
  for (const secret of secrets) spellings.add(JSON.stringify(secret).slice(1, -1));
  const strings = [...spellings].sort((a, b) => b.length - a.length);
  const buffers = strings.filter((s) => !strings.some((other) => other !== s && s.includes(other))).map((s) => Buffer.from(s));
  return { strings, buffers };
}

/** `secret` and `replacement` in UTF-16LE, UTF-16BE, UTF-32LE and UTF-32BE, pairwise. */
function wideSpellings(secret: string, replacement: string): { secret: Buffer; replacement: Buffer }[] {
  const utf16le = (s: string): Buffer => Buffer.from(s, 'utf16le');
  const utf16be = (s: string): Buffer => Buffer.from(s, 'utf16le').swap16();
  const utf32 = (s: string, littleEndian: boolean): Buffer => {
    const points = [...s].map((c) => c.codePointAt(0) as number);
    const out = Buffer.alloc(points.length * 4);
    points.forEach((p, k) => (littleEndian ? out.writeUInt32LE(p, k * 4) : out.writeUInt32BE(p, k * 4)));
    return out;
  };
  return [
    { secret: utf32(secret, true), replacement: utf32(replacement, true) },
    { secret: utf32(secret, false), replacement: utf32(replacement, false) },
    { secret: utf16le(secret), replacement: utf16le(replacement) },
    { secret: utf16be(secret), replacement: utf16be(replacement) },
  ];
}

/** A JSON escape: `\uXXXX` (with the low half of a surrogate pair after it, when there is one) or `\` and one character. */
const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?|([^u]))/g;

/** `JSON.stringify`'s short escapes: control characters, the quote, the backslash. */
const SHORT_ESCAPES: Readonly<Record<number, string>> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };

/** One UTF-16 code unit as `JSON.stringify` writes it inside a string. */
function canonicalUnit(code: number): string {
  const short = SHORT_ESCAPES[code];
  if (short !== undefined) return short;
  if (code < 0x20 || (code >= 0xd800 && code <= 0xdfff)) return `\\u${code.toString(16).padStart(4, '0')}`;
  return String.fromCharCode(code);
}

/** A {@link JSON_ESCAPE} as `JSON.stringify` writes the same character(s): `\/` as `/`, `\u0041` as `A`, `\u0022` as `\"`, a surrogate pair as its character. */
function canonicalEscape(escape: string, hex: string | undefined, lowHex: string | undefined, char: string | undefined): string {
  if (hex === undefined) return char === '/' ? '/' : escape;
  const code = Number.parseInt(hex, 16);
  if (lowHex === undefined) return canonicalUnit(code);
  const low = Number.parseInt(lowHex, 16);
  return code >= 0xd800 && code <= 0xdbff ? String.fromCharCode(code, low) : canonicalUnit(code) + canonicalUnit(low);
}

/**
 * The credentials the gateway sends upstream: the route's `apiKey` and the values of the
 * credential headers it sets (`Authorization`, `Proxy-Authorization`, `x-api-key`, `api-key`),
 * each also without its `Bearer ` / `Basic ` scheme.
 */
export function credentialSecrets(apiKey: string | undefined, headers: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  if (apiKey !== undefined) out.push(apiKey);
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.has(name.toLowerCase())) continue;
    out.push(value);
    const token = /^\s*(?:bearer|basic)\s+(.+)$/i.exec(value)?.[1];
    if (token !== undefined) out.push(token.trim());
  }
  return out;
}

/**
 * Parts of an upstream URL a client must not learn, for scrubbing error messages: the URL as
 * given and as normalized, its origin, `host` (with port), host name, and its
 * {@link urlCredentials}.
 */
export function urlSecrets(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [url];
  }
  return [url, u.href, u.origin, u.host, u.hostname, ...urlCredentials(url)].filter((s) => s.length > 0);
}

/**
 * Words that make a query parameter a credential when its name is one of them or holds one as
 * a word (`key`, `api_key`, `apiKey`, `subscription-key`, `X-Amz-Security-Token`, `sig`), case
 * aside. Names are split at `-`, `_`, `.`, other punctuation and camelCase humps.
 */
const CREDENTIAL_PARAM_WORDS: ReadonlySet<string> = new Set([
  'key', 'apikey', 'token', 'accesstoken', 'refreshtoken', 'idtoken', 'auth', 'authorization', 'bearer', 'jwt',
  'sig', 'signature', 'secret', 'clientsecret', 'password', 'passwd', 'pwd', 'pass', 'passphrase',
  'code', 'credential', 'credentials', 'session', 'sessionid', 'cookie', 'private', 'privatekey', 'sas', 'otp',
]);

/**
 * True when a query parameter named `name` carries a credential, by its name alone (see
 * {@link CREDENTIAL_PARAM_WORDS}): `key`, `api-key`, `api_key`, `apiKey`, `token`,
 * `access_token`, `sig`, `signature`, `secret`, `password`, `auth`, `code`, `credential` and the
 * like. `mode`, `api-version`, `model` are not: their values stay readable in logs.
 *
 * @example
 * isCredentialParam('X-Amz-Signature'); // true
 * isCredentialParam('api-version'); // false
 */
export function isCredentialParam(name: string): boolean {
  const spaced = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  if (CREDENTIAL_PARAM_WORDS.has(spaced.replace(/[^a-z0-9]+/g, ''))) return true;
  return spaced.split(/[^a-z0-9]+/).some((word) => CREDENTIAL_PARAM_WORDS.has(word));
}

/** The `name=value` pairs of a query string as written (no `?`), each with its decoded name. */
function queryPairs(search: string): { raw: string; name: string; value: string | undefined }[] {
  return search
    .split('&')
    .filter((p) => p !== '')
    .map((raw) => {
      const eq = raw.indexOf('=');
      const name = decodeQueryPart(eq < 0 ? raw : raw.slice(0, eq));
      return { raw, name, value: eq < 0 ? undefined : raw.slice(eq + 1) };
    });
}

/** `search` (no `?`) with the value of each credential parameter ({@link isCredentialParam}) replaced by {@link REDACTED}. */
function redactQuery(search: string): string {
  return queryPairs(search)
    .map((p) => (p.value !== undefined && p.value !== '' && isCredentialParam(p.name) ? `${p.raw.slice(0, p.raw.indexOf('='))}=${REDACTED}` : p.raw))
    .join('&');
}

/**
 * An upstream URL's credentials, as they may appear in text an upstream or a network error
 * sends back: its user name and password (decoded and as written, each of at least 4
 * characters), the `Authorization: Basic …` value Node's HTTP client sends for that userinfo (an
 * upstream may echo that header, e.g. on a route whose own key goes in `x-api-key`), and the
 * values of its credential query parameters ({@link isCredentialParam}; decoded and as written),
 * a value under 4 characters as its `name=value` pair only. A value of another
 * parameter is no credential. Secret even in logs.
 */
export function urlCredentials(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const part of [u.username, u.password, decodeURIComponentSafe(u.username), decodeURIComponentSafe(u.password)]) if (part.length >= 4) out.push(part);
  if (u.username !== '' || u.password !== '') {
    // What `http.request` sends for `auth` (node-fetch passes the URL's userinfo, decoded, as `auth`).
    for (const auth of new Set([`${decodeURIComponentSafe(u.username)}:${decodeURIComponentSafe(u.password)}`, `${u.username}:${u.password}`])) {
      const token = Buffer.from(auth).toString('base64');
      out.push(`Basic ${token}`, token);
    }
  }
  for (const pair of queryPairs(u.search.slice(1))) {
    if (pair.value === undefined || pair.value === '' || !isCredentialParam(pair.name)) continue;
    const value = decodeQueryPart(pair.value);
    const values = [...new Set([value, pair.value, encodeURIComponent(value)])];
    if (values.every((v) => v.length >= 4)) out.push(...values);
    // A short value alone would rewrite ordinary text: it is found after its name, pair and all.
    else out.push(...new Set([pair.raw, `${pair.name}=${value}`]));
  }
  return out;
}

/** The scrubbers and log fields of one upstream call (see {@link upstreamRedaction}). */
export interface UpstreamRedaction {
  /** The credentials the gateway sends upstream (headers, the URL's userinfo and its credential query parameters' values, of 8+ characters): scrubbed from every upstream body and frame relayed to a client. */
  readonly keys: Scrubber;
  /** {@link keys} and every part of the upstream URL: scrubbed from error bodies and messages a client sees. */
  readonly errors: Scrubber;
  /** The upstream URL for logs ({@link redactUrl}). */
  readonly url: string;
  /** An error's detail for logs (its cause's message when it has one): the URL redacted, no credential. */
  detail(error: unknown): string | undefined;
}

/**
 * What one upstream call must keep from clients and logs: `apiKey` and the credential headers
 * it sends (see {@link credentialSecrets}), the URL's host, userinfo and query.
 */
export function upstreamRedaction(url: string, apiKey: string | undefined, headers: Readonly<Record<string, string>>): UpstreamRedaction {
  const { credentials, urlScrubber, credentialScrubber, redacted, href } = urlParts(url);
  // Credentials in the URL (userinfo, a `?key=` query value) are credentials too: an upstream may echo its URL.
  const keys = new Scrubber([...credentialSecrets(apiKey, headers), ...credentials]);
  const forLogs = keys.with(credentialScrubber);
  return {
    keys,
    errors: keys.with(urlScrubber),
    url: redacted,
    detail(error) {
      if (error === undefined) return undefined;
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      const message = cause instanceof Error ? cause.message : String(cause);
      return forLogs.string(message.split(href).join(redacted).split(url).join(redacted));
    },
  };
}

/** What {@link upstreamRedaction} takes from an upstream URL. */
interface UrlParts {
  readonly credentials: readonly string[];
  /** Its {@link urlSecrets}, and its {@link urlCredentials}, as scrubbers of any length. */
  readonly urlScrubber: Scrubber;
  readonly credentialScrubber: Scrubber;
  readonly redacted: string;
  readonly href: string;
}

/**
 * The parts of URLs that hold no credential (no userinfo, no query), by URL: a route's own
 * upstream URL is parsed once, not five times per stream, and its scrubber (with its `Buffer`s)
 * is shared by the streams whose calls have no credential of their own. A URL with a credential in it is never
 * kept past its call. Bounded: cleared when full.
 */
const plainUrlParts = new Map<string, UrlParts>();
const MAX_PLAIN_URLS = 64;

function urlParts(url: string): UrlParts {
  const known = plainUrlParts.get(url);
  if (known !== undefined) return known;
  let href = url;
  try {
    href = new URL(url).href;
  } catch {
    // not a URL: only the string as given is replaced
  }
  const credentials = urlCredentials(url);
  const parts: UrlParts = { credentials, urlScrubber: new Scrubber(urlSecrets(url), 1), credentialScrubber: new Scrubber(credentials, 1), redacted: redactUrl(url), href };
  if (!url.includes('@') && !url.includes('?')) {
    if (plainUrlParts.size >= MAX_PLAIN_URLS) plainUrlParts.clear();
    plainUrlParts.set(url, parts);
  }
  return parts;
}

/**
 * `url` for logs: its userinfo replaced by `[redacted]`, the value of each credential query
 * parameter ({@link isCredentialParam}) by `[redacted]`, the fragment dropped; other parameters
 * keep their values. Not a URL: `[redacted]`.
 *
 * @example
 * redactUrl('https://u:p@host/v1?api-version=2024-06-01&api-key=abc');
 * // 'https://[redacted]@host/v1?api-version=2024-06-01&api-key=[redacted]'
 */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return REDACTED;
  }
  const userinfo = u.username !== '' || u.password !== '' ? `${REDACTED}@` : '';
  const query = redactQuery(u.search.slice(1));
  // `host` is empty for a URL with no authority (`data:`, `mailto:`): its path is all there is.
  const authority = u.host === '' && userinfo === '' ? '' : `//${userinfo}${u.host}`;
  return `${u.protocol}${authority}${u.pathname}${query === '' ? '' : `?${query}`}`;
}

/**
 * `url` as configured (not normalised: no trailing slash added), for the startup line: its
 * userinfo replaced by `[redacted]`, the value of each credential query parameter by
 * `[redacted]` (as {@link redactUrl}), the fragment dropped.
 */
export function redactUrlAsGiven(url: string): string {
  try {
    new URL(url);
  } catch {
    return REDACTED;
  }
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(?:([^/?#]*)@)?([^?#]*)(?:\?([^#]*))?/i.exec(url.trim());
  if (m === null) return redactUrl(url);
  const [, scheme, userinfo, rest, query] = m;
  const search = redactQuery(query ?? '');
  return `${scheme}${userinfo === undefined ? '' : `${REDACTED}@`}${rest}${search === '' ? '' : `?${search}`}`;
}

/** A query name or value decoded as a form does (`+` a space), as written when malformed. */
function decodeQueryPart(s: string): string {
  return decodeURIComponentSafe(s.replace(/\+/g, ' '));
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
