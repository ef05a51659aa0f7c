import { encodeSse, encodeSseBuffer } from '../../../src';

describe('encodeSse', () => {
  it('writes comments first, then id, event, retry, data, and a blank line', () => {
    expect(encodeSse({ data: 'd', retry: 3000, event: 'e', id: '1', comment: 'c' })).toBe(
      ': c\nid: 1\nevent: e\nretry: 3000\ndata: d\n\n',
    );
  });

  it('writes no line for an absent field', () => {
    expect(encodeSse({ data: 'x' })).toBe('data: x\n\n');
    expect(encodeSse({ comment: 'ping' })).toBe(': ping\n\n');
  });

  it('writes "name: value" with one space also for empty values', () => {
    expect(encodeSse({ id: '', event: '', data: '' })).toBe('id: \nevent: \ndata: \n\n');
    expect(encodeSse({ comment: '' })).toBe(': \n\n');
  });

  it('splits data on CRLF, LF and CR into one data line each', () => {
    expect(encodeSse({ data: 'a\r\nb\nc\rd' })).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(encodeSse({ data: '\n' })).toBe('data: \ndata: \n\n');
    expect(encodeSse({ data: 'a\r\r\nb' })).toBe('data: a\ndata: \ndata: b\n\n');
  });

  it('splits comments into one ": " line each', () => {
    expect(encodeSse({ comment: 'x\r\ny' })).toBe(': x\n: y\n\n');
  });

  it('keeps leading spaces and colons in values (the parser strips only the one it adds)', () => {
    expect(encodeSse({ data: ' a: b' })).toBe('data:  a: b\n\n');
  });

  it('writes no BOM and uses LF line ends only', () => {
    const out = encodeSseBuffer({ id: '1', data: '日本\r\n😀' });
    expect(out[0]).not.toBe(0xef);
    expect(out.includes(0x0d)).toBe(false);
    expect(out.toString('utf8')).toBe('id: 1\ndata: 日本\ndata: 😀\n\n');
  });

  it.each(['a\nb', 'a\rb', 'a\r\nb', 'a\0b'])('throws TypeError for an id containing CR, LF or NUL (%j)', (id) => {
    expect(() => encodeSse({ id, data: 'x' })).toThrow(TypeError);
    expect(() => encodeSse({ id, data: 'x' })).toThrow(/id must not contain CR, LF or NUL/);
  });

  it.each(['a\nb', 'a\rb', 'x\r\ndata: injected'])('throws TypeError for an event containing CR or LF (%j)', (event) => {
    expect(() => encodeSse({ event, data: 'x' })).toThrow(/event must not contain CR or LF/);
  });

  it('accepts NUL in event and data', () => {
    expect(encodeSse({ event: 'a\0', data: '\0' })).toBe('event: a\0\ndata: \0\n\n');
  });

  it.each([-1, 1.5, NaN, Infinity, '10'])('throws TypeError for retry %p', (retry) => {
    expect(() => encodeSse({ retry: retry as number })).toThrow(TypeError);
  });

  it('accepts retry 0', () => {
    expect(encodeSse({ retry: 0 })).toBe('retry: 0\n\n');
  });

  it('throws TypeError for a non-string field', () => {
    expect(() => encodeSse({ data: 42 as unknown as string })).toThrow(/data must be a string/);
  });
});
