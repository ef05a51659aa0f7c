import { BodyFraming } from '../../src/http/body-framing';

/** Feeds `wire` cut at `cuts`, as the socket reads would hand it over; returns the body and the decoder. */
function decodeIn(wire: string, cuts: number[], contentLength?: number): { body: string; framing: BodyFraming } {
  const framing = new BodyFraming(contentLength);
  let body = '';
  let start = 0;
  for (const end of [...cuts, wire.length]) {
    const read = Buffer.from(wire.slice(start, end), 'latin1');
    const out = Buffer.alloc(read.length);
    const n = framing.decode(read, 0, read.length, out, 0);
    body += out.toString('latin1', 0, n);
    start = end;
  }
  return { body, framing };
}

const CHUNKED = '5\r\nhello\r\n1;name=value\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n';

describe('BodyFraming', () => {
  it('picks the body out of a chunked encoding cut at every offset', () => {
    for (let cut = 0; cut <= CHUNKED.length; cut++) {
      const { body, framing } = decodeIn(CHUNKED, [cut]);
      expect({ cut, body, done: framing.done, failure: framing.failure }).toEqual({ cut, body: 'hello 0123456789', done: true, failure: undefined });
    }
  });

  it('picks the body out of a chunked encoding cut into single bytes', () => {
    const cuts = Array.from({ length: CHUNKED.length - 1 }, (_, i) => i + 1);
    expect(decodeIn(CHUNKED, cuts).body).toBe('hello 0123456789');
  });

  it('stops at the end of the body', () => {
    const read = Buffer.from('3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n', 'latin1');
    const framing = new BodyFraming(undefined);
    const out = Buffer.alloc(read.length);
    expect(out.toString('latin1', 0, framing.decode(read, 0, read.length, out, 0))).toBe('abc');
    expect(framing.done).toBe(true);
    expect(read.toString('latin1', 13)).toBe('HTTP/1.1 200 OK\r\n');
  });

  it('takes Content-Length bytes and no more', () => {
    const { body, framing } = decodeIn('hello world, and more', [3, 7], 11);
    expect(body).toBe('hello world');
    expect(framing.done).toBe(true);
  });

  it('decodes from an offset (the body after a head in the same read) to an offset', () => {
    const read = Buffer.from('HEAD\r\n\r\n2\r\nok\r\n0\r\n\r\n', 'latin1');
    const framing = new BodyFraming(undefined);
    const out = Buffer.alloc(read.length);
    const n = framing.decode(read, 8, read.length, out, 3);
    expect(out.toString('latin1', 3, 3 + n)).toBe('ok');
    expect(framing.done).toBe(true);
  });

  it('reads chunk sizes written with leading zeros, as many as they come', () => {
    const wire = `${'0'.repeat(20)}5\r\nhello\r\n${'0'.repeat(13)}1\r\n!\r\n${'0'.repeat(30)}\r\n\r\n`;
    for (let cut = 0; cut <= wire.length; cut++) {
      const { body, framing } = decodeIn(wire, [cut]);
      expect({ cut, body, done: framing.done, failure: framing.failure }).toEqual({ cut, body: 'hello!', done: true, failure: undefined });
    }
  });

  it.each([
    ['a size line without digits', 'x\r\n'],
    ['chunk data without its CRLF', '2\r\nokX\r\n'],
    ['a size over 13 hex digits', '10000000000000\r\n'],
    ['a size over 13 hex digits behind leading zeros', '00010000000000000\r\n'],
  ])('fails on %s', (_name, wire) => {
    const { framing } = decodeIn(wire, []);
    expect(framing.failure).toEqual(expect.any(String));
    expect(framing.done).toBe(false);
  });
});
