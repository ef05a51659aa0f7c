import { bodyCoding } from '../../src/http/content-coding';

/** `Content-Encoding` read as RFC 9110 §8.4 reads it, to what node-fetch can decode. */
describe('bodyCoding', () => {
  it.each([undefined, '', 'identity', 'IDENTITY', ' , ,identity', 'identity, identity'])('reads %p as identity', (value) => {
    expect(bodyCoding(value)).toEqual({ kind: 'identity' });
  });

  it.each([
    ['gzip', 'gzip'],
    ['GZip', 'gzip'],
    [' \tgzip\t ', 'gzip'],
    ['identity, x-gzip', 'x-gzip'],
    ['deflate, identity,', 'deflate'],
    ['X-Deflate', 'x-deflate'],
  ])('reads %p as the one coding %p, lower case', (value, coding) => {
    expect(bodyCoding(value)).toEqual({ kind: 'decoded', coding });
  });

  it.each([
    ['zstd', ['zstd']],
    ['x-foo', ['x-foo']],
    ['gzip, zstd', ['gzip', 'zstd']],
    ['GZIP,GZIP', ['gzip', 'gzip']],
    ['br, identity, gzip', ['br', 'gzip']],
    // Its decoder's window (up to 16 MiB) would sit outside the stream's budget.
    ['BR', ['br']],
    // Only spaces and tabs are whitespace around a list element.
    ['\u00a0gzip', ['\u00a0gzip']],
  ])('refuses %p, listing its codings in order', (value, codings) => {
    expect(bodyCoding(value)).toEqual({ kind: 'refused', codings });
  });
});
