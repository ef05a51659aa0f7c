import { MAX_JSON_DEPTH, scanJsonBounds, topLevelKeyCount } from '../../src/gateway/json-bounds';

const scan = (text: string, maxDepth = MAX_JSON_DEPTH): ReturnType<typeof scanJsonBounds> => scanJsonBounds(Buffer.from(text, 'utf8'), { maxDepth });
const nested = (levels: number, open = '[', close = ']'): string => open.repeat(levels) + close.repeat(levels);

describe('scanJsonBounds: depth', () => {
  it(`accepts exactly ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}`, () => {
    expect(scan(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(scan(nested(MAX_JSON_DEPTH + 1))).toEqual({ bound: 'depth', limit: MAX_JSON_DEPTH, offset: MAX_JSON_DEPTH });
  });

  it('counts objects and arrays alike', () => {
    const mixed = '{"a":[{"b":[1]}]}';
    expect(scan(mixed, 4)).toBeUndefined();
    expect(scan(mixed, 3)).toMatchObject({ bound: 'depth', offset: mixed.indexOf('[1') });
  });

  it('measures depth, not the number of containers', () => {
    expect(scan(`[${Array.from({ length: 10_000 }, () => '[[]]').join(',')}]`, 3)).toBeUndefined();
  });

  it('ignores brackets inside strings', () => {
    expect(scan(`["${'['.repeat(1000)}", {"k${'{'.repeat(1000)}": "]]]]"}]`, 2)).toBeUndefined();
  });

  it('does not end a string at an escaped quote', () => {
    // The string is `\"[[[[` : the brackets are text.
    expect(scan('["\\"[[[["]', 1)).toBeUndefined();
    expect(scan('{"a\\"":"\\"[[[["}', 1)).toBeUndefined();
  });

  it('ends a string at a quote after an escaped backslash', () => {
    // The string is `\\` : the brackets after it are structure.
    expect(scan('["\\\\",[[1]]]', 2)).toMatchObject({ bound: 'depth', offset: 7 });
    expect(scan('["\\\\\\\\",[[1]]]', 2)).toMatchObject({ bound: 'depth', offset: 9 });
  });

  it('reads strings with multi-byte characters and \\u escapes as JSON.parse does', () => {
    const text = '["é€😀\\u0022[[[", [["\\u005b"]]]';
    expect(JSON.parse(text)).toEqual(['é€😀"[[[', [['[']]]);
    expect(scan(text, 3)).toBeUndefined();
    expect(scan(text, 2)).toMatchObject({ bound: 'depth' });
  });

  it('passes a text that is not JSON to the parser as its brackets say', () => {
    expect(scan('["unterminated [[[[[', 1)).toBeUndefined();
    expect(scan(']]]]', 1)).toBeUndefined();
    expect(scan('not json', 1)).toBeUndefined();
  });
});

describe('scanJsonBounds: strings of every length', () => {
  /** The nesting of a parsed JSON value. */
  const depthOf = (v: unknown): number => (typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);
  /** A string of `length` characters drawn from quotes, backslashes, brackets and letters, from `seed`. */
  const tricky = (length: number, seed: number): string => {
    const alphabet = ['"', '\\', '[', ']', '{', '}', 'a', 'é'];
    let out = '';
    let x = seed;
    for (let i = 0; i < length; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      out += alphabet[x % alphabet.length];
    }
    return out;
  };

  it('finds the depth JSON.parse sees, around the short-string cut and past it', () => {
    for (let length = 0; length < 200; length++) {
      const value = { [tricky(length % 70, length + 1)]: [tricky(length, length), [[tricky(length * 3, length + 7)]]] };
      const text = JSON.stringify(value);
      const depth = depthOf(JSON.parse(text));
      expect(depth).toBe(4);
      expect(scan(text, depth)).toBeUndefined();
      expect(scan(text, depth - 1)).toMatchObject({ bound: 'depth' });
    }
  });
});

describe('scanJsonBounds: values', () => {
  const values = (text: string, maxValues: number): ReturnType<typeof scanJsonBounds> => scanJsonBounds(Buffer.from(text), { maxDepth: MAX_JSON_DEPTH, maxValues });

  it('counts objects, arrays and strings, keys included', () => {
    // {, "a", [, "b", "c": 5
    const text = '{"a":[1,2,3],"b":"c"}';
    expect(values(text, 4)).toEqual({ bound: 'values', limit: 4, offset: text.indexOf('"c"') });
    expect(values(text, 5)).toBeUndefined();
  });

  it('does not count numbers, true, false and null', () => {
    expect(values(`[${Array.from({ length: 1000 }, (_, i) => [i, 1.5, true, false, null][i % 5]).join(',')}]`, 1)).toBeUndefined();
  });

  it('counts a string once, whatever it holds', () => {
    expect(values(JSON.stringify(['{"a":[1,"b"]}', '\\"[{', 'x'.repeat(100_000)]), 4)).toBeUndefined();
    expect(values(JSON.stringify(['{"a":[1,"b"]}', '\\"[{', 'x'.repeat(100_000)]), 3)).toMatchObject({ bound: 'values' });
  });

  it('stops at the first value past the cap', () => {
    const text = `[${Array.from({ length: 1_000_000 }, () => '{}').join(',')}]`;
    expect(values(text, 10)).toEqual({ bound: 'values', limit: 10, offset: 1 + 9 * 3 });
  });

  it('takes 0 as no cap', () => {
    expect(values('[{},{},{}]', 0)).toBeUndefined();
  });
});

describe('topLevelKeyCount', () => {
  const count = (text: string): number => topLevelKeyCount(Buffer.from(text));

  it('counts the keys of the top-level object only, as JSON.parse would find them', () => {
    const escaped = JSON.stringify({ 'a"': '\\', 'b\\"c': 1, ['x'.repeat(200)]: 'y\\"'.repeat(50), z: [':', { q: ':' }] });
    for (const text of ['{}', '{"a":1}', ' {"a" : {"b":1,"c":[{"d":2}]}, "e":"f:g", "h":[":",{"i":":"}]} ', escaped]) {
      expect(count(text)).toBe(Object.keys(JSON.parse(text) as object).length);
    }
  });

  it('counts a key given twice twice, where JSON.parse keeps one', () => {
    expect(count('{"stream":false,"model":"m","stream":true}')).toBe(3);
    expect(count('{"a":{"b":1,"b":2}}')).toBe(1); // nested duplicates are not the top level's
  });

  it('is -1 for a text that is not an object', () => {
    expect(count('[{"a":1}]')).toBe(-1);
    expect(count('"{"')).toBe(-1);
  });
});
