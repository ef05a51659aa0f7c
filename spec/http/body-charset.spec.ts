import { decodeBody, encodeBody, isUtf8Body } from '../../src/http/body-charset';

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

describe('decodeBody and encodeBody', () => {
  it('carry every byte of a single-byte body through a string and back', () => {
    for (const contentType of ['text/html; charset=ISO-8859-1', 'text/plain;charset="windows-1252"', 'text/html; charset=koi8-r']) {
      const text = decodeBody(ALL_BYTES, contentType);
      expect(encodeBody(text, contentType)).toEqual({ bytes: ALL_BYTES, contentType });
    }
    expect(decodeBody(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/html; charset=ISO-8859-1')).toBe('café');
  });

  it('read UTF-16LE and UTF-16BE, and write each back byte for byte', () => {
    const text = '{"error":"bad key sk-ü😀"}';
    const le = Buffer.from(text, 'utf16le');
    const be = Buffer.from(le).swap16();
    expect(decodeBody(le, 'application/json; charset=UTF-16LE')).toBe(text);
    expect(decodeBody(le, 'application/json; charset=utf-16')).toBe(text);
    expect(decodeBody(be, 'application/json; charset=UTF-16BE')).toBe(text);
    expect(encodeBody(text, 'application/json; charset=UTF-16BE').bytes.equals(be)).toBe(true);
    expect(encodeBody(text, 'application/json; charset=utf-16le').bytes.equals(le)).toBe(true);
  });

  it('read a UTF-16BE body cut inside a code unit without throwing', () => {
    expect(decodeBody(Buffer.from([0x00, 0x61, 0x00]), 'text/plain; charset=utf-16be')).toBe('a');
  });

  it('read a multi-byte charset Node cannot write, and write the text back as UTF-8 labelled utf-8', () => {
    // 'エラー: sk-1' in Shift_JIS.
    const sjis = Buffer.from([0x83, 0x47, 0x83, 0x89, 0x81, 0x5b, 0x3a, 0x20, 0x73, 0x6b, 0x2d, 0x31]);
    expect(decodeBody(sjis, 'text/plain; charset=Shift_JIS')).toBe('エラー: sk-1');
    expect(encodeBody('エラー: [redacted]', 'text/plain; charset="Shift_JIS"; format=flowed')).toEqual({
      bytes: Buffer.from('エラー: [redacted]', 'utf8'),
      contentType: 'text/plain; charset=utf-8; format=flowed',
    });
  });

  it('read UTF-8 when no charset is named, and an unknown charset as latin1, byte for byte', () => {
    expect(decodeBody(Buffer.from('café', 'utf8'), 'application/json')).toBe('café');
    expect(decodeBody(Buffer.from('café', 'utf8'), undefined)).toBe('café');
    const text = decodeBody(ALL_BYTES, 'text/plain; charset=x-no-such-charset');
    expect(encodeBody(text, 'text/plain; charset=x-no-such-charset').bytes.equals(ALL_BYTES)).toBe(true);
  });
});

describe('a body without a charset', () => {
  const text = '{"error":"bad key sk-ü😀"}';
  const utf32 = (littleEndian: boolean): Buffer => {
    const points = [...text].map((c) => c.codePointAt(0) as number);
    const bytes = Buffer.alloc(points.length * 4);
    points.forEach((p, i) => (littleEndian ? bytes.writeUInt32LE(p, i * 4) : bytes.writeUInt32BE(p, i * 4)));
    return bytes;
  };

  it('is read in UTF-16 or UTF-32 when its first bytes show it, with a byte order mark or without', () => {
    const le = Buffer.from(text, 'utf16le');
    expect(decodeBody(le, 'application/json')).toBe(text);
    expect(decodeBody(Buffer.concat([Buffer.from([0xff, 0xfe]), le]), 'application/json')).toBe(`\ufeff${text}`);
    expect(decodeBody(Buffer.from(le).swap16(), 'application/json')).toBe(text);
    expect(decodeBody(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(le).swap16()]), undefined)).toBe(`\ufeff${text}`);
    expect(decodeBody(utf32(true), 'application/json')).toBe(text);
    expect(decodeBody(utf32(false), 'application/json')).toBe(text);
    expect(decodeBody(Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), utf32(true)]), 'application/json')).toBe(`\ufeff${text}`);
    expect(decodeBody(Buffer.from(text), 'application/json')).toBe(text);
  });

  it('is written back as UTF-8, which a body without a charset is', () => {
    expect(encodeBody(text, 'application/json')).toEqual({ bytes: Buffer.from(text, 'utf8'), contentType: 'application/json' });
  });

  it('is scanned as bytes only when UTF-8', () => {
    expect(isUtf8Body('application/json', Buffer.from(text))).toBe(true);
    expect(isUtf8Body('application/json', Buffer.from(text, 'utf16le'))).toBe(false);
    expect(isUtf8Body('application/json', utf32(false))).toBe(false);
  });

  it('reads a UTF-32 unit that is no scalar value, or a cut one, as U+FFFD', () => {
    expect(decodeBody(Buffer.from([0x41, 0, 0, 0, 0, 0xd8, 0, 0, 0x42, 0, 0]), 'text/plain; charset=utf-32le')).toBe('A\ufffd\ufffd');
  });
});

describe('isUtf8Body', () => {
  it('is true for no charset and for UTF-8 only', () => {
    expect(isUtf8Body('application/json')).toBe(true);
    expect(isUtf8Body('application/json; charset=UTF-8')).toBe(true);
    expect(isUtf8Body(undefined)).toBe(true);
    expect(isUtf8Body('application/json; charset=utf-16le')).toBe(false);
    expect(isUtf8Body('text/html; charset=iso-8859-1')).toBe(false);
    expect(isUtf8Body('text/html; charset=shift_jis')).toBe(false);
  });
});
