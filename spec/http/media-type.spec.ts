import { bodyEncoding, isMediaType } from '../../src/http/media-type';

describe('isMediaType', () => {
  it.each(['text/event-stream', 'TEXT/Event-Stream', 'text/event-stream; charset=utf-8', 'TEXT/Event-Stream ; charset=latin1', ' text/event-stream\t;charset=utf-8', 'text/event-stream;'])(
    'matches %j case-insensitively, parameters and the whitespace around the type ignored',
    (value) => {
      expect(isMediaType(value, 'text/event-stream')).toBe(true);
    },
  );

  it.each(['text/event-streams', 'text/event', 'application/json, text/event-stream', 'text/event-stream, application/json', 'text/ event-stream', 'text/plain', ''])('does not match %j', (value) => {
    expect(isMediaType(value, 'text/event-stream')).toBe(false);
  });

  it('matches nothing when there is no value', () => {
    expect(isMediaType(undefined, 'application/json')).toBe(false);
    expect(isMediaType(null, 'application/json')).toBe(false);
  });
});

describe('bodyEncoding', () => {
  it('reads single-byte charsets as latin1, UTF-16LE as utf16le, and anything else as UTF-8', () => {
    expect(bodyEncoding('text/html; charset=ISO-8859-1')).toBe('latin1');
    expect(bodyEncoding('text/plain;charset="windows-1252"')).toBe('latin1');
    expect(bodyEncoding('application/json; charset=UTF-16LE')).toBe('utf16le');
    expect(bodyEncoding('application/json; charset=utf-8')).toBe('utf8');
    expect(bodyEncoding('application/json')).toBe('utf8');
    expect(bodyEncoding('text/html; charset=shift_jis')).toBe('utf8');
    expect(bodyEncoding(undefined)).toBe('utf8');
  });

  it('carries every byte of a single-byte body through a string and back', () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(Buffer.from(bytes.toString(bodyEncoding('text/html; charset=iso-8859-15')), 'latin1').equals(bytes)).toBe(true);
  });
});
