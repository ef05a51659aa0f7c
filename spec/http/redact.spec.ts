import { credentialSecrets, isCredentialParam, redactUrl, redactUrlAsGiven, Scrubber, upstreamRedaction, urlCredentials, urlSecrets } from '../../src/http/redact';

describe('Scrubber', () => {
  const scrubber = new Scrubber(['sk-canary-123456', 'short', undefined]);

  it('replaces every secret of at least 8 characters, and nothing else', () => {
    expect(scrubber.active).toBe(true);
    expect(scrubber.string('a sk-canary-123456 b sk-canary-123456 short')).toBe('a [redacted] b [redacted] short');
  });

  it('returns the same buffer when it holds no secret, a scrubbed copy otherwise', () => {
    const clean = Buffer.from('data: {"x":1}\n\n');
    expect(scrubber.buffer(clean)).toBe(clean);
    expect(scrubber.buffer(Buffer.from('data: sk-canary-123456\n\n')).toString()).toBe('data: [redacted]\n\n');
  });

  it('wideBytes replaces a secret spelt in UTF-16 or UTF-32, at any offset, spelling the replacement alike', () => {
    const clean = Buffer.from('plain sk-canary-123456 in UTF-8', 'utf8');
    expect(scrubber.wideBytes(clean)).toBe(clean);
    const utf16le = Buffer.concat([Buffer.from([0x7b]), Buffer.from('key sk-canary-123456, again sk-canary-123456', 'utf16le')]);
    expect(scrubber.wideBytes(utf16le).subarray(1).toString('utf16le')).toBe('key [redacted], again [redacted]');
    const utf16be = Buffer.from('key sk-canary-123456', 'utf16le').swap16();
    expect(scrubber.wideBytes(utf16be).swap16().toString('utf16le')).toBe('key [redacted]');
    const utf32le = Buffer.alloc(4 * 20);
    [...'sk-canary-123456 end'].forEach((c, k) => utf32le.writeUInt32LE(c.codePointAt(0) as number, 4 * k));
    const out = scrubber.wideBytes(utf32le);
    expect(Array.from({ length: out.length / 4 }, (_, k) => String.fromCodePoint(out.readUInt32LE(4 * k))).join('')).toBe('[redacted] end');
  });

  it('json finds a secret spelt with JSON escapes and keeps the JSON value otherwise', () => {
    const s = new Scrubber(['sk-secret-value', '10.0.0.5:8000']);
    const body = '{"error":{"message":"bad key \\u0073k-secret\\u002dvalue at http:\\/\\/10.0.0.5:8000\\/v1","note":"a \\"quote\\" and \\u00e9\\n"}}';
    const out = s.json(body);
    expect(JSON.parse(out)).toEqual({ error: { message: 'bad key [redacted] at http://[redacted]/v1', note: 'a "quote" and é\n' } });
    expect(out).toContain('\\"quote\\"');
    expect(s.json('{"ok":"http:\\/\\/example.com \\u0041"}')).toBe('{"ok":"http:\\/\\/example.com \\u0041"}');
    expect(s.json('{"key":"\\\\u0073k-secret-value"}')).toBe('{"key":"\\\\u0073k-secret-value"}');
    expect(s.json('cut short: \\u0073k-secret-value and \\')).toBe('cut short: [redacted] and \\');
  });

  it('finds a secret with a quote, a backslash, a control character or an emoji in every JSON spelling', () => {
    const secrets = ['p4ss"w0rdQ', 'sk-abc\\def12345', 'line\nbreak99', 'pw\u{1F600}secret'];
    const s = new Scrubber(secrets);
    for (const secret of secrets) {
      const plain = JSON.stringify({ message: `bad ${secret} here` });
      const spellings = [
        plain,
        plain.replace(/\\"/g, '\\u0022').replace(/\\\\/g, '\\u005C').replace(/\\n/g, '\\u000A'),
        JSON.stringify({ message: `bad ${secret} here` }).replace(/\u{1F600}/u, '\\ud83d\\ude00'),
      ];
      for (const body of spellings) expect(JSON.parse(s.json(body))).toEqual({ message: 'bad [redacted] here' });
    }
    // The spelling JSON.stringify gives is found by the plain scans too (stream events, frames).
    expect(s.string(JSON.stringify('x p4ss"w0rdQ'))).toBe('"x [redacted]"');
    expect(s.buffer(Buffer.from(JSON.stringify('sk-abc\\def12345'))).toString()).toBe('"[redacted]"');
  });

  it('is inactive without secrets', () => {
    expect(new Scrubber([]).active).toBe(false);
  });
});

describe('credentialSecrets', () => {
  it('takes the api key, credential header values and their tokens', () => {
    expect(credentialSecrets('sk-a', { authorization: 'Bearer sk-b', 'x-api-key': 'sk-c', 'content-type': 'application/json' })).toEqual(['sk-a', 'Bearer sk-b', 'sk-b', 'sk-c']);
  });
});

describe('URLs', () => {
  const url = 'http://user-x:pass-x@127.0.0.1:9999/v1/chat?token=tok-secret&a=b';

  it('redactUrl keeps the host, path and ordinary query values, and hides userinfo and credential parameters', () => {
    expect(redactUrl(url)).toBe('http://[redacted]@127.0.0.1:9999/v1/chat?token=[redacted]&a=b');
    expect(redactUrl('not a url')).toBe('[redacted]');
  });

  it('redactUrl keeps a long ordinary value and hides a short credential', () => {
    expect(redactUrl('https://h/v1?mode=loop&api-version=2024-06-01&key=abc')).toBe('https://h/v1?mode=loop&api-version=2024-06-01&key=[redacted]');
  });

  it('redactUrl hides userinfo with a user name only, and drops the fragment', () => {
    expect(redactUrl('https://user@h/p?x=1#frag')).toBe('https://[redacted]@h/p?x=1');
  });

  it.each([
    'key', 'KEY', 'api-key', 'api_key', 'apiKey', 'x-api-key', 'subscription-key', 'token', 'access_token', 'accessToken', 'X-Amz-Security-Token',
    'sig', 'signature', 'X-Amz-Signature', 'secret', 'client_secret', 'password', 'auth', 'code', 'credential', 'X-Amz-Credential', 'sessionToken',
  ])('names %s a credential parameter', (name) => {
    expect(isCredentialParam(name)).toBe(true);
  });

  it.each(['mode', 'api-version', 'model', 'keyword', 'passage', 'stream', 'a', 'limit'])('does not name %s a credential parameter', (name) => {
    expect(isCredentialParam(name)).toBe(false);
  });

  it('a credential in the upstream URL is scrubbed from relayed bodies too, ordinary query values are not', () => {
    const r = upstreamRedaction('http://127.0.0.1:9/pt?apikey=sk-QUERYSECRET-zzzz&mode=streaming&x=1', undefined, {});
    expect(r.keys.string('echo /pt?apikey=sk-QUERYSECRET-zzzz&x=1, streaming')).toBe('echo /pt?apikey=[redacted]&x=1, streaming');
  });

  it('a short credential is found after its name, its value alone is left in ordinary text', () => {
    expect(urlCredentials('http://h/p?key=abc&mode=loop')).toEqual(['key=abc']);
    const r = upstreamRedaction('http://h/p?key=abc&mode=loop', undefined, {});
    expect(r.detail(new Error('GET /p?key=abc failed for abc'))).toBe('GET /p?[redacted] failed for abc');
  });

  it('redactUrlAsGiven marks userinfo and credential values, as written', () => {
    expect(redactUrlAsGiven('http://user-x:pass-x@127.0.0.1:9/v1?key=secret-x&mode=loop')).toBe('http://[redacted]@127.0.0.1:9/v1?key=[redacted]&mode=loop');
    expect(redactUrlAsGiven('http://127.0.0.1:9')).toBe('http://127.0.0.1:9');
  });

  it("the Basic credential Node sends for the URL's userinfo is scrubbed from relayed bodies", () => {
    const r = upstreamRedaction('http://us%40er:p%3Ass@127.0.0.1:9/v1/messages', undefined, {});
    const basic = Buffer.from('us@er:p:ss').toString('base64');
    expect(r.keys.string(`got Basic ${basic} and ${basic}`)).toBe('got [redacted] and [redacted]');
  });

  it('urlSecrets names host:port, userinfo and query values', () => {
    expect(urlSecrets(url)).toEqual(expect.arrayContaining(['127.0.0.1:9999', 'user-x', 'pass-x', 'tok-secret']));
    expect(urlSecrets(url)).not.toContain('b');
  });

  it('an error detail for logs keeps the failure and drops the credentials', () => {
    const r = upstreamRedaction(url, 'sk-canary-123456', {});
    const err = new Error('wrapped', { cause: new Error(`request to ${url} failed, reason: connect ECONNREFUSED 127.0.0.1:9999 (sk-canary-123456)`) });
    expect(r.detail(err)).toBe('request to http://[redacted]@127.0.0.1:9999/v1/chat?token=[redacted]&a=b failed, reason: connect ECONNREFUSED 127.0.0.1:9999 ([redacted])');
    expect(r.errors.string('at 127.0.0.1:9999 with pass-x')).toBe('at [redacted] with [redacted]');
  });
});
