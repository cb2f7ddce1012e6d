import { JSON_SHAPE_LIMITS, checkJsonShape } from './json-shape';

const check = (value: unknown) =>
  checkJsonShape(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)));
const objectWith = (keys: number) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i]));

describe('checkJsonShape', () => {
  it('passes every body a request needs', () => {
    expect(
      check({ description: 'a "quoted" {brace} [bracket]: colon, comma \\ ', provider: 'codex', title: 't' }),
    ).toBeNull();
    expect(check({ attachmentIds: ['att_1', 'att_2'], message: 'emoji 😀 and \ud83d\ude00 as escapes' })).toBeNull();
    expect(check('{"emoji":"\\ud83d\\ude00","e":"\\u00e9\\\\u","empty":[],"blank":[ ]}')).toBeNull();
    expect(check(objectWith(JSON_SHAPE_LIMITS.keysPerObject))).toBeNull();
    expect(check(Array.from({ length: JSON_SHAPE_LIMITS.arrayItems }, () => 0))).toBeNull();
  });

  it('refuses too many keys in one object, or in all objects together', () => {
    expect(check(objectWith(JSON_SHAPE_LIMITS.keysPerObject + 1))?.code).toBe('too_many_keys');
    expect(check(objectWith(90_000))?.code).toBe('too_many_keys');
    const spread = Array.from({ length: 20 }, () => objectWith(60));
    expect(check(spread)?.code).toBe('too_many_keys');
    expect(check({ a: Array.from({ length: 9 }, () => objectWith(100)) })).toBeNull();
  });

  it('refuses too many array items, nested or not', () => {
    expect(check(Array.from({ length: JSON_SHAPE_LIMITS.arrayItems + 1 }, () => 0))?.code).toBe('too_many_items');
    expect(
      check({ a: Array.from({ length: 6_000 }, () => []), b: Array.from({ length: 6_000 }, () => 'x') })?.code,
    ).toBe('too_many_items');
  });

  it('refuses nesting deeper than the limit (arrays and objects alike)', () => {
    expect(check('['.repeat(JSON_SHAPE_LIMITS.depth) + ']'.repeat(JSON_SHAPE_LIMITS.depth))).toBeNull();
    expect(check('['.repeat(JSON_SHAPE_LIMITS.depth + 1))?.code).toBe('body_too_deep');
    expect(check('{"a":'.repeat(100_000))?.code).toBe('body_too_deep');
  });

  it('refuses lone surrogate escapes, in values and keys, but not escaped backslashes that look like them', () => {
    for (const text of [
      '"\\ud800"',
      '"a\\uD800b"',
      '"\\udfff"',
      '"\\ud800\\u0041"',
      '"\\ud800\\ud800"',
      '{"\\udc00":1}',
      '"\\ude00\\ud83d"',
    ]) {
      expect({ text, code: check(`{"x":${text}}`)?.code }).toEqual({ code: 'invalid_text', text });
    }
    expect(check('{"x":"\\\\ud800"}')).toBeNull();
  });

  it('refuses NUL escapes (PostgreSQL text cannot hold them), but not an escaped backslash before u0000', () => {
    for (const text of ['"\\u0000"', '"a\\u0000b"', '{"\\u0000":1}']) {
      expect({ text, code: check(`{"x":${text}}`)?.code }).toEqual({ code: 'invalid_text', text });
    }
    expect(check('{"x":"\\\\u0000"}')).toBeNull();
    expect(check({ x: 'a\u0001b' })).toBeNull();
  });

  it('ignores structure inside strings and leaves malformed JSON to the parser', () => {
    expect(check({ s: '{'.repeat(500) + ':'.repeat(5_000) + ','.repeat(20_000) })).toBeNull();
    expect(check('{"a":"\\u12')).toBeNull();
    expect(check('}}}]]]')).toBeNull();
  });

  it('stays linear: a 1 MB body is checked in well under a second', () => {
    const body = Buffer.from(JSON.stringify({ message: 'x'.repeat(1_000_000) }));
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      checkJsonShape(body);
    }
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
