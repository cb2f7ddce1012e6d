/**
 * Limits on the shape of a JSON request body, checked on its raw bytes before it is parsed.
 * No request needs more: the widest DTO (the configuration) has under 20 fields, the deepest
 * nests two levels, and no array field takes more than a few hundred items. Past these limits
 * the cost is not in JSON.parse (linear and fast) but in what follows: class-transformer and the
 * ValidationPipe walk every key, and `forbidNonWhitelisted` builds one error per unknown key,
 * which took 12 s of the one event loop for a 90,000-key object.
 */
export const JSON_SHAPE_LIMITS = {
  /** Nesting of objects and arrays. */
  depth: 32,
  /** Members of any one object. */
  keysPerObject: 100,
  /** Members of all objects in the body together. */
  keys: 1_000,
  /** Elements of all arrays in the body together. */
  arrayItems: 10_000,
} as const;

export type JsonShapeLimits = { [K in keyof typeof JSON_SHAPE_LIMITS]: number };

export type JsonShapeProblem =
  | { code: 'body_too_deep'; message: string }
  | { code: 'too_many_keys'; message: string }
  | { code: 'too_many_items'; message: string }
  | { code: 'invalid_text'; message: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const LOWER_U = 0x75;

/** The code unit of a `\uXXXX` escape whose `u` is at `at`, or -1 when it is not four hex digits. */
function escapedUnit(bytes: Uint8Array, at: number): number {
  if (at + 4 >= bytes.length) {
    return -1;
  }
  let unit = 0;
  for (let i = at + 1; i <= at + 4; i++) {
    const b = bytes[i];
    const digit =
      b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x61 && b <= 0x66 ? b - 0x57 : b >= 0x41 && b <= 0x46 ? b - 0x37 : -1;
    if (digit < 0) {
      return -1;
    }
    unit = unit * 16 + digit;
  }
  return unit;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/**
 * One linear pass over UTF-8 JSON bytes (structural characters are ASCII, so they never occur
 * inside a multi-byte sequence): counts nesting, keys and array items, and finds `\uD800`-style
 * escapes of a lone UTF-16 surrogate. SQLite stores text as UTF-8, where a lone surrogate cannot
 * exist (it would be stored as U+FFFD while the answer echoed the original), so such text is
 * refused rather than silently rewritten; so is a `\u0000` escape (PostgreSQL text cannot hold NUL,
 * and no field has a use for it). Malformed JSON is left to JSON.parse to report: this
 * pass only has to stop early and never miscount valid input.
 */
export function checkJsonShape(
  bytes: Uint8Array,
  limits: JsonShapeLimits = JSON_SHAPE_LIMITS,
): JsonShapeProblem | null {
  // One entry per open container: its member (or, for arrays, comma) count so far, and its kind.
  const counts: number[] = [];
  const isObject: boolean[] = [];
  let keys = 0;
  let items = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === QUOTE) {
        inString = false;
      } else if (b === BACKSLASH) {
        i++;
        if (bytes[i] === LOWER_U) {
          const unit = escapedUnit(bytes, i);
          if (isHigh(unit)) {
            const next = bytes[i + 5] === BACKSLASH && bytes[i + 6] === LOWER_U ? escapedUnit(bytes, i + 6) : -1;
            if (!isLow(next)) {
              return loneSurrogate();
            }
            i += 10;
          } else if (isLow(unit)) {
            return loneSurrogate();
          } else if (unit === 0) {
            return nulText();
          } else {
            i += 4;
          }
        }
      }
      continue;
    }
    switch (b) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (counts.length >= limits.depth) {
          return { code: 'body_too_deep', message: `request bodies may nest at most ${limits.depth} levels` };
        }
        if (b === OPEN_ARRAY && !isEmptyArray(bytes, i)) {
          items++;
        }
        counts.push(0);
        isObject.push(b === OPEN_OBJECT);
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        counts.pop();
        isObject.pop();
        break;
      case COLON:
        if (isObject[isObject.length - 1]) {
          const inThis = counts[counts.length - 1] + 1;
          counts[counts.length - 1] = inThis;
          keys++;
          if (inThis > limits.keysPerObject) {
            return {
              code: 'too_many_keys',
              message: `a JSON object in a request body may have at most ${limits.keysPerObject} keys`,
            };
          }
          if (keys > limits.keys) {
            return { code: 'too_many_keys', message: `a request body may have at most ${limits.keys} keys in all` };
          }
        }
        break;
      case COMMA:
        if (isObject[isObject.length - 1] === false) {
          items++;
        }
        break;
      default:
        break;
    }
    if (items > limits.arrayItems) {
      return {
        code: 'too_many_items',
        message: `a request body may have at most ${limits.arrayItems} array items in all`,
      };
    }
  }
  return null;
}

/**
 * An array's first item is counted at its `[` (each later one at a comma), unless the next
 * non-blank byte closes it. The look-ahead skips only whitespace, so it stays linear overall.
 */
function isEmptyArray(bytes: Uint8Array, open: number): boolean {
  for (let j = open + 1; j < bytes.length; j++) {
    const c = bytes[j];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) {
      return c === CLOSE_ARRAY;
    }
  }
  return true;
}

/** PostgreSQL text cannot hold NUL, and no field has a use for it: refused on both stores alike. */
function nulText(): JsonShapeProblem {
  return { code: 'invalid_text', message: 'request body text contains NUL (a \\u0000 escape)' };
}

function loneSurrogate(): JsonShapeProblem {
  return {
    code: 'invalid_text',
    message: 'request body text contains a lone UTF-16 surrogate (a \\uD800–\\uDFFF escape without its pair)',
  };
}
