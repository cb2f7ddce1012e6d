/* eslint-disable @typescript-eslint/no-unnecessary-type-assertion -- fast-check infers each branch's value type from its literals; the widening assertions here are what make the branches of one arbitrary a single union type. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

import * as fc from 'fast-check';

import { PUBLIC_ROUTES } from '@server/core/http/public-routes';

import type { FuzzRequest } from './fuzz-http';
import { utf8Header } from './fuzz-http';

/** Real resource IDs seeded before the run, by kind. */
export interface IdPools {
  requirement: string[];
  session: string[];
  message: string[];
  attachment: string[];
  timer: string[];
  run: string[];
}

export interface FuzzTarget {
  origin: string;
  port: string;
  token: string;
  pools: IdPools;
}

type Schema = {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  nullable?: boolean;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  format?: string;
};

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
}

export interface Operation {
  method: string;
  path: string;
  label: string;
  parameters: Parameter[];
  body: { kind: 'json'; schema: Schema } | { kind: 'binary' } | { kind: 'raw' } | null;
}

const ROOT = path.resolve(__dirname, '..', '..');

/** Every path × method of the OpenAPI document, with its request body schema resolved. */
export function loadOperations(): Operation[] {
  const doc = JSON.parse(fs.readFileSync(path.join(ROOT, 'libs', 'api-client', 'openapi.json'), 'utf8')) as {
    paths: Record<
      string,
      Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> } }>
    >;
    components: { schemas: Record<string, Schema> };
  };
  const resolve = (schema: Schema | undefined): Schema => {
    if (schema?.$ref) {
      return resolve(doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
    }
    return schema ?? {};
  };
  const operations: Operation[] = [];
  for (const [p, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) {
        continue;
      }
      const content = op.requestBody?.content ?? {};
      let body: Operation['body'] = null;
      if (content['application/json']) {
        const schema = resolve(content['application/json'].schema);
        body = {
          kind: 'json',
          schema: {
            ...schema,
            properties: Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, resolve(v)])),
          },
        };
      } else if (content['application/octet-stream']) {
        body = { kind: 'binary' };
      } else if (p.endsWith('/webhook')) {
        body = { kind: 'raw' };
      }
      operations.push({
        body,
        label: `${method.toUpperCase()} ${p}`,
        method: method.toUpperCase(),
        parameters: op.parameters ?? [],
        path: p,
      });
    }
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// Building blocks

const UUID0 = '00000000-0000-4000-8000-000000000000';
const PREFIX_OF: Record<keyof IdPools | 'pullRequest', string> = {
  attachment: 'att',
  message: 'msg',
  pullRequest: 'pr',
  requirement: 'req',
  run: 'run',
  session: 'ses',
  timer: 'tmr',
};

/** Strings that tend to break things: control characters, bidi overrides, emoji, lone surrogates. */
const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40, unit: 'grapheme' }),
  fc.string({ maxLength: 40, unit: 'binary' }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\u202eevil\u202c',
    '\u2066rtl\u2069',
    '👩‍👩‍👧‍👦🏳️‍🌈',
    '\ud800',
    'x\udfffy',
    '\ufeffBOM',
    'Ω≈ç√∫˜µ≤≥÷',
    '\r\n\r\nHTTP/1.1 200 OK',
    "' OR 1=1 --",
    '"; DROP TABLE requirement; --',
    '${process.exit(1)}',
    '{{constructor.constructor("return process")()}}',
    '../../../../etc/passwd',
    '%00',
    '\\u0000',
    ' ',
    '',
    'null',
    'undefined',
    '__proto__',
    '9'.repeat(400),
  ),
);

function hugeString(min: number): fc.Arbitrary<string> {
  return fc
    .oneof(
      { arbitrary: fc.integer({ max: min + 64, min: Math.max(min, 1) }), weight: 20 },
      { arbitrary: fc.integer({ max: 200_000, min: 100_001 }), weight: 3 },
      { arbitrary: fc.constant(1_100_000), weight: 1 },
    )
    .chain((n) =>
      fc.constantFrom('x', 'é', '😀', '\u0000', 'ab').map((unit) => unit.repeat(Math.ceil(n / unit.length))),
    );
}

/**
 * Deeply nested arrays or objects. Kept as a placeholder string until the body is encoded, where
 * it becomes the nested JSON text (JSON.stringify itself would overflow the stack on them).
 */
function deepNesting(): fc.Arbitrary<unknown> {
  return fc
    .tuple(fc.integer({ max: 20_000, min: 50 }), fc.boolean())
    .map(([depth, asObject]) => `__DEEP_${depth}_${asObject ? 'o' : 'a'}__`);
}

function toJsonText(value: unknown): string | undefined {
  const text = JSON.stringify(value);
  return text?.replace(/"__DEEP_(\d+)_([oa])__"/g, (_m, depth: string, kind: string) => {
    const n = Number(depth);
    return kind === 'o' ? `${'{"a":'.repeat(n)}"bottom"${'}'.repeat(n)}` : `${'['.repeat(n)}"bottom"${']'.repeat(n)}`;
  });
}

const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    2 ** 53 + 2,
    [],
    {},
    [1, 2],
    { $gt: '' },
    '',
    '0',
    'true',
    'NaN',
    'Infinity',
  ),
  fc.integer(),
  fc.double(),
  fc.array(fc.string(), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  nastyString,
);

/** encodeURIComponent that also takes lone surrogates (sent as their WTF-8 bytes: invalid UTF-8). */
export function encodeLoose(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (
      code >= 0xd800 &&
      code <= 0xdbff &&
      i + 1 < value.length &&
      value.charCodeAt(i + 1) >= 0xdc00 &&
      value.charCodeAt(i + 1) <= 0xdfff
    ) {
      out += encodeURIComponent(value.slice(i, i + 2));
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(value[i] as string);
    }
  }
  return out;
}

type PoolKind = keyof IdPools | 'pullRequest';
type PoolVariant = 'real' | 'upper' | 'wrongprefix';
const POOL_REF = /ZPOOL_([A-Za-z]+)_(\d+)_([a-z]+)_ZPOOL/g;

/**
 * A real ID of `kind`, chosen when the request is sent rather than when it is generated: the
 * pools grow with what the fuzzed requests create (and shrink in effect when retention purges),
 * so later requests hit resources made by earlier ones. The reference is plain ASCII and survives
 * URI encoding and JSON.
 */
function poolRef(kind: PoolKind, variant: PoolVariant = 'real'): fc.Arbitrary<string> {
  return fc.nat({ max: 1_000_000 }).map((n) => `ZPOOL_${kind}_${n}_${variant}_ZPOOL`);
}

/** Replaces pool references with IDs from the live pools (a well-formed unknown ID when empty). */
export function resolvePoolRefs(text: string, pools: IdPools): string {
  return text.replace(POOL_REF, (_m, kind: string, n: string, variant: string) => {
    const list = kind === 'pullRequest' ? [] : (pools[kind as keyof IdPools] ?? []);
    const id =
      list.length > 0 ? (list[Number(n) % list.length] as string) : `${PREFIX_OF[kind as PoolKind] ?? 'zzz'}_${UUID0}`;
    return variant === 'upper' ? id.toUpperCase() : variant === 'wrongprefix' ? id.replace(/^[a-z]+_/, 'xyz_') : id;
  });
}

/** The request with its pool references replaced by live IDs (path, headers and body). */
export function resolveRequest(request: FuzzRequest, pools: IdPools): FuzzRequest {
  const has = (text: string) => text.includes('ZPOOL_');
  const body =
    request.body && request.body.includes('ZPOOL_')
      ? Buffer.from(resolvePoolRefs(request.body.toString('latin1'), pools), 'latin1')
      : request.body;
  return {
    ...request,
    body,
    headers: Object.fromEntries(
      Object.entries(request.headers).map(([k, v]) => [k, has(v) ? resolvePoolRefs(v, pools) : v]),
    ),
    path: has(request.path) ? resolvePoolRefs(request.path, pools) : request.path,
  };
}

const PREFIX_KIND: Record<string, keyof IdPools> = {
  att: 'attachment',
  msg: 'message',
  req: 'requirement',
  run: 'run',
  ses: 'session',
  tmr: 'timer',
};
/** Requirements are capped: each started one holds an (idle) agent process. */
const POOL_CAPS: Record<keyof IdPools, number> = {
  attachment: 200,
  message: 200,
  requirement: 30,
  run: 100,
  session: 60,
  timer: 100,
};

/** Adds the IDs a successful answer mentions to the pools. */
export function harvestIds(text: string, pools: IdPools): void {
  for (const match of text.matchAll(
    /"(att|msg|req|run|ses|tmr)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"/g,
  )) {
    const kind = PREFIX_KIND[match[1] as string] as keyof IdPools;
    const id = `${match[1]}_${match[2]}`;
    if (pools[kind].length < POOL_CAPS[kind] && !pools[kind].includes(id)) {
      pools[kind].push(id);
    }
  }
}

/** A path parameter: real IDs, IDs of the wrong kind, unknown IDs, and strings no ID looks like. */
function idSegment(kind: PoolKind, clean = false): fc.Arbitrary<{ value: string; tag: string; big?: boolean }> {
  const prefix = PREFIX_OF[kind];
  const others = (['attachment', 'message', 'requirement', 'run', 'session', 'timer'] as const).filter(
    (k) => k !== kind,
  );
  const enc = (tag: string) => (s: string) => ({ tag, value: encodeLoose(s) });
  if (clean) {
    return poolRef(kind).map(enc('id:real'));
  }
  return fc.oneof(
    { arbitrary: poolRef(kind).map(enc('id:real')), weight: 12 },
    {
      arbitrary: fc
        .constantFrom(...others)
        .chain((k) => poolRef(k))
        .map(enc('id:wrong-kind')),
      weight: 2,
    },
    {
      arbitrary: fc
        .uuid()
        .map((u) => `${prefix}_${u}`)
        .map(enc('id:unknown')),
      weight: 2,
    },
    {
      arbitrary: poolRef(kind, 'wrongprefix').map(enc('id:wrong-prefix')),
      weight: 1,
    },
    {
      arbitrary: poolRef(kind, 'upper').map(enc('id:uppercase')),
      weight: 1,
    },
    { arbitrary: nastyString.filter((s) => s.length > 0).map(enc('id:unicode')), weight: 2 },
    {
      arbitrary: fc
        .integer({ max: 20_000, min: 200 })
        .map((n) => ({ big: n > 8000, tag: 'id:huge', value: 'a'.repeat(n) })),
      weight: 1,
    },
    {
      arbitrary: fc
        .constantFrom(
          '..%2F..%2Fetc%2Fpasswd',
          '..',
          '.',
          '%2e%2e',
          '..%5c..%5c',
          '%2F',
          '%ZZ',
          '%',
          '%C0%AF',
          '%00',
          '%E0%A4%A',
          '%uD83D',
          'null',
          '0',
          '-1',
          '1e308',
          'undefined',
          '*',
          '%2A',
        )
        .map((value) => ({ tag: 'id:odd', value })),
      weight: 2,
    },
    { arbitrary: fc.constant({ tag: 'id:empty', value: '' }), weight: 1 },
  );
}

function paramKind(op: Operation, name: string): keyof IdPools | 'pullRequest' {
  if (name === 'timerId') {
    return 'timer';
  }
  if (name === 'targetId' || name === 'requirementId') {
    return 'requirement';
  }
  if (name === 'sourceSessionId') {
    return 'session';
  }
  if (name === 'pullRequestId') {
    return 'pullRequest';
  }
  if (op.path.startsWith('/api/attachments/')) {
    return 'attachment';
  }
  if (op.path.startsWith('/api/runs/')) {
    return 'run';
  }
  if (op.path.startsWith('/api/pull-requests/')) {
    return 'pullRequest';
  }
  return 'requirement';
}

/** Paths a diff may be asked for: the changed file, unchanged ones, and escapes from the worktree. */
const WORKTREE_PATHS = [
  'changed.txt',
  'README.md',
  'src/app.ts',
  '../outside',
  '../../etc/passwd',
  '/etc/passwd',
  'src/../../x',
  '.git/config',
  'src/',
  '.',
  '',
];
/** Words the seeded conversations hold, and prefixes of them. */
const SEARCH_WORDS = ['fuzzing', 'seeded', 'queued', 'message', 'start', 'go', 'todo', 'fuzz*', 'se', '"seeded for"'];

/** One query parameter's value: valid, out of range, the wrong type, repeated, garbage. */
function queryValue(op: Operation, param: Parameter, clean: boolean): fc.Arbitrary<{ parts: string[]; tag: string }> {
  const schema = param.schema ?? {};
  const one = (tag: string) => (v: string) => ({ parts: [`${encodeLoose(param.name)}=${encodeLoose(v)}`], tag });
  const valid: fc.Arbitrary<string> =
    schema.type === 'number'
      ? fc.integer({ max: Math.min(schema.maximum ?? 1000, 1_000_000), min: schema.minimum ?? 0 }).map(String)
      : schema.enum
        ? fc.constantFrom(...(schema.enum as string[]))
        : /Id$/.test(param.name)
          ? idSegment(paramKind(op, param.name), clean).map((s) => decodeURIComponentSafe(s.value))
          : param.name === 'after'
            ? fc.nat({ max: 50 }).map(String)
            : param.name === 'path' || param.name === 'oldPath'
              ? // A worktree's file (the fuzz workspace changes one), and the ways out of it.
                fc.oneof(fc.constantFrom(...WORKTREE_PATHS), fc.string({ maxLength: 20 }))
              : param.name === 'q'
                ? fc.oneof(fc.constantFrom(...SEARCH_WORDS), fc.string({ maxLength: 20 }))
                : fc.string({ maxLength: 20 });
  const invalid: fc.Arbitrary<string> = fc.oneof(
    fc.constantFrom(
      '-1',
      '0',
      '201',
      '1.5',
      '1e400',
      '9007199254740993',
      'NaN',
      'Infinity',
      '0x10',
      '',
      ' ',
      'abc',
      'true',
      'null',
      '[]',
      '{}',
      '%',
    ),
    nastyString,
    fc.base64String({ maxLength: 60 }),
    fc.integer({ max: 2000, min: 513 }).map((n) => 'c'.repeat(n)),
  );
  if (clean) {
    return valid.map(one('query:valid'));
  }
  return fc.oneof(
    { arbitrary: valid.map(one('query:valid')), weight: 5 },
    { arbitrary: invalid.map(one('query:invalid')), weight: 4 },
    {
      arbitrary: fc.tuple(valid, invalid).map(([a, b]) => ({
        parts: [`${param.name}=${encodeLoose(a)}`, `${param.name}=${encodeLoose(b)}`],
        tag: 'query:repeated',
      })),
      weight: 1,
    },
    { arbitrary: fc.constant({ parts: [`${param.name}[$gt]=`] as string[], tag: 'query:bracket' }), weight: 1 },
  );
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

// ---------------------------------------------------------------------------------------------
// Bodies

/** A value that satisfies `schema` (names get realistic values: IDs from the live pools, harmless executables). */
function validValue(name: string, schema: Schema): fc.Arbitrary<unknown> {
  const base = ((): fc.Arbitrary<unknown> => {
    if (schema.enum) {
      return fc.constantFrom(...schema.enum);
    }
    switch (name) {
      case 'codexExecutable':
      case 'claudeExecutable':
        return fc.constantFrom('/nonexistent/agent', 'definitely-not-on-path');
      case 'requirementId':
      case 'sourceRequirementId':
      case 'parentRequirementId':
        return poolRef('requirement');
      case 'sourceSessionId':
        return poolRef('session');
      case 'url':
        return fc.constant('https://github.com/org/repo/pull/1');
      case 'allowedOrigin':
        return fc.constantFrom('http://localhost:4200', 'https://example.com');
      case 'host':
        return fc.constantFrom('127.0.0.1', 'localhost');
      case 'githubApiUrl':
        return fc.constant('https://api.github.com');
      case 'databasePath':
      case 'logFilePath':
        return fc.constant(null);
      case 'logMaxFiles':
        return fc.constantFrom('14d', '10');
      case 'logMaxSize':
        return fc.constantFrom('20m', '1000000');
      case 'authentication':
        return fc.constant('token');
      case 'attachmentIds':
        return fc.array(poolRef('attachment'), { maxLength: 3 });
      case 'headSha':
        return fc.constant('0123456789abcdef0123456789abcdef01234567');
      default:
        break;
    }
    switch (schema.type) {
      case 'string':
        return fc.string({
          maxLength: Math.min(schema.maxLength ?? 60, 60),
          minLength: Math.max(schema.minLength ?? 0, 0),
          unit: 'grapheme',
        });
      case 'number':
        // A fractional field (a budget's dollars: minimum 0.01) takes fractions; whole numbers are in range too.
        return fc.oneof(
          fc.double({
            max: Math.min(schema.maximum ?? 1_000_000, 2 ** 31),
            min: schema.minimum ?? 0,
            noDefaultInfinity: true,
            noNaN: true,
          }),
          fc.integer({
            max: Math.floor(Math.min(schema.maximum ?? 1_000_000, 2 ** 31)),
            min: Math.ceil(schema.minimum ?? 0),
          }),
        );
      case 'integer':
        return fc.integer({
          max: Math.floor(Math.min(schema.maximum ?? 1_000_000, 2 ** 31)),
          min: Math.ceil(schema.minimum ?? 0),
        });
      case 'boolean':
        return fc.boolean();
      case 'array':
        return fc.array(validValue(`${name}[]`, schema.items ?? {}), { maxLength: 4 });
      case 'object':
        return validObject(schema);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return schema.nullable ? fc.oneof({ arbitrary: base, weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }) : base;
}

function validObject(schema: Schema): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(properties)) {
    record[key] = validValue(key, prop);
  }
  return fc.record(record, { requiredKeys: (schema.required ?? []).filter((k) => k in properties) }) as fc.Arbitrary<
    Record<string, unknown>
  >;
}

/** The wrong value for a field of this schema. */
function corruptValue(schema: Schema): fc.Arbitrary<{ value: unknown; tag: string }> {
  const numeric = schema.type === 'number' || schema.type === 'integer';
  const outOfRange = fc.constantFrom(
    ...[
      (schema.minimum ?? 0) - 1,
      (schema.maximum ?? 2 ** 31) + 1,
      -0,
      0.5,
      1e308,
      -1e308,
      2 ** 53 + 2,
      Number.MIN_VALUE,
    ],
  );
  return fc.oneof(
    { arbitrary: wrongValue.map((value) => ({ tag: 'field:wrong-type', value })), weight: 5 },
    { arbitrary: fc.constant({ tag: 'field:null', value: null }), weight: 2 },
    {
      arbitrary: hugeString((schema.maxLength ?? 1000) + 1).map((value) => ({
        tag: `field:huge-${value.length > 1_000_000 ? 'mb' : 'string'}`,
        value,
      })),
      weight: 2,
    },
    { arbitrary: nastyString.map((value) => ({ tag: 'field:unicode', value })), weight: 3 },
    {
      arbitrary: (numeric ? outOfRange : fc.constantFrom(1, -1, 1e308)).map((value) => ({
        tag: 'field:number-range',
        value,
      })),
      weight: 2,
    },
    {
      arbitrary: numeric
        ? fc.constantFrom('60', '1e3', ' 7 ').map((value) => ({ tag: 'field:numeric-string', value }))
        : fc.constant({ tag: 'field:array', value: ['a'] }),
      weight: 1,
    },
    { arbitrary: deepNesting().map((value) => ({ tag: 'field:deep', value })), weight: 1 },
  );
}

type BodyDraft = {
  body?: Buffer | undefined;
  contentType?: string | undefined;
  extraHeaders: Record<string, string>;
  tags: string[];
  big?: boolean | undefined;
};

const mutation = (schema: Schema): fc.Arbitrary<(obj: Record<string, unknown>) => { obj: unknown; tag: string }> => {
  const keys = Object.keys(schema.properties ?? {});
  const required = (schema.required ?? []).filter((k) => keys.includes(k));
  const options: Array<fc.WeightedArbitrary<(obj: Record<string, unknown>) => { obj: unknown; tag: string }>> = [
    {
      arbitrary: fc
        .tuple(
          fc.oneof(
            fc.string({ maxLength: 12 }),
            fc.constantFrom(
              '__proto__',
              'constructor',
              'prototype',
              'id',
              'status',
              'createdAt',
              'toString',
              'hasOwnProperty',
            ),
          ),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(([key, value]) => (obj) => {
          const out = { ...obj };
          Object.defineProperty(out, key, { configurable: true, enumerable: true, value, writable: true });
          return { obj: out, tag: 'body:extra-field' };
        }),
      weight: 3,
    },
    {
      arbitrary: fc
        .constantFrom('[]', '"string"', '42', 'null', 'true', '[{}]')
        .map((json) => () => ({ obj: JSON.parse(json) as unknown, tag: 'body:not-object' })),
      weight: 2,
    },
    {
      arbitrary: fc.constant((obj: Record<string, unknown>) => ({ obj: [obj], tag: 'body:array-of-object' })),
      weight: 1,
    },
    { arbitrary: deepNesting().map((deep) => () => ({ obj: deep, tag: 'body:deep' })), weight: 1 },
  ];
  if (required.length > 0) {
    options.push({
      arbitrary: fc.constantFrom(...required).map((key) => (obj) => {
        const out = { ...obj };
        delete out[key];
        return { obj: out, tag: 'body:missing-required' };
      }),
      weight: 3,
    });
  }
  if (keys.length > 0) {
    options.push({
      arbitrary: fc.tuple(fc.constantFrom(...keys), fc.constant(null)).chain(([key]) =>
        corruptValue(schema.properties?.[key] ?? {}).map(({ value, tag }) => (obj: Record<string, unknown>) => ({
          obj: { ...obj, [key]: value },
          tag,
        })),
      ),
      weight: 10,
    });
  }
  return fc.oneof(...options);
};

/** Bodies that are not JSON at all, or JSON with the wrong framing. */
const notJson = fc.oneof<Array<fc.Arbitrary<BodyDraft>>>(
  fc
    .constantFrom(
      '{',
      '{"title":',
      '{"a":1,}',
      "{'a':1}",
      'undefined',
      'NaN',
      '\u0000',
      '{"title":"a","title":5}',
      '\ufeff{"title":"x","provider":"codex"}',
      '['.repeat(5000),
      '{"a":' + '['.repeat(3000),
    )
    .map((text) => ({
      body: Buffer.from(text, 'utf8'),
      contentType: 'application/json',
      extraHeaders: {},
      tags: ['body:malformed-json'],
    })),
  fc.uint8Array({ maxLength: 2048 }).map((bytes) => ({
    body: Buffer.from(bytes),
    contentType: 'application/json',
    extraHeaders: {},
    tags: ['body:binary-as-json'],
  })),
  fc
    .constantFrom(
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'application/json; charset=bogus',
    )
    .map((ct) => ({
      body: Buffer.from('{"title":"x"}', 'utf16le'),
      contentType: ct,
      extraHeaders: {},
      tags: ['body:charset'],
    })),
  fc.constantFrom('gzip', 'deflate', 'br', 'compress', 'x-bogus').map((enc) => ({
    body: Buffer.from('not compressed at all'),
    contentType: 'application/json',
    extraHeaders: { 'Content-Encoding': enc },
    tags: ['body:bad-encoding'],
  })),
  fc.constant({
    body: zlib.gzipSync(Buffer.from('{"provider":"codex","title":"gz"}')),
    contentType: 'application/json',
    extraHeaders: { 'Content-Encoding': 'gzip' },
    tags: ['body:gzip'],
  }),
  fc.constant({
    body: zlib.gzipSync(Buffer.alloc(3_000_000, 0x20)),
    contentType: 'application/json',
    extraHeaders: { 'Content-Encoding': 'gzip' },
    tags: ['body:gzip-bomb'],
  }),
  fc.constant({
    body: Buffer.alloc(1_100_000, 0x61),
    contentType: 'application/json',
    extraHeaders: {},
    tags: ['body:huge-raw'],
    big: true,
  }),
);

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/vnd.api+json',
  'application/xml',
  '*/*',
  'application/json;;;',
  'application/octet-stream',
  '',
];

function jsonBody(schema: Schema, clean: boolean): fc.Arbitrary<BodyDraft> {
  const valid = validObject(schema);
  const encode = (value: unknown, tags: string[]): BodyDraft => {
    const text = toJsonText(value);
    const body = text === undefined ? Buffer.alloc(0) : Buffer.from(text, 'utf8');
    return { big: body.length > 500_000, body, contentType: 'application/json', extraHeaders: {}, tags };
  };
  if (clean) {
    return valid.map((obj) => encode(obj, ['body:valid']));
  }
  return fc.oneof<Array<fc.WeightedArbitrary<BodyDraft>>>(
    { arbitrary: valid.map((obj) => encode(obj, ['body:valid'])), weight: 5 },
    {
      arbitrary: fc.tuple(valid, fc.array(mutation(schema), { maxLength: 3, minLength: 1 })).map(([obj, mutations]) => {
        let current: unknown = obj;
        const tags: string[] = [];
        for (const mutate of mutations) {
          const out = mutate(
            current && typeof current === 'object' && !Array.isArray(current)
              ? (current as Record<string, unknown>)
              : {},
          );
          current = out.obj;
          tags.push(out.tag);
        }
        return encode(current, tags);
      }),
      weight: 12,
    },
    { arbitrary: notJson, weight: 2 },
    {
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...CONTENT_TYPES))
        .map(([obj, ct]) => ({ ...encode(obj, ['body:wrong-content-type']), contentType: ct })),
      weight: 2,
    },
    { arbitrary: fc.constant({ extraHeaders: {}, tags: ['body:none'] }), weight: 1 },
  );
}

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

function binaryBody(clean: boolean): fc.Arbitrary<BodyDraft> {
  const fileName = fc.oneof(
    {
      arbitrary: fc
        .constantFrom('a.txt', 'shot.png', 'x')
        .map((v) => ({ tag: 'file:plain', v: v as string | undefined })),
      weight: 6,
    },
    {
      arbitrary: fc
        .string({ maxLength: 30, minLength: 1, unit: 'grapheme' })
        .map((s) => ({ tag: 'file:unicode', v: encodeLoose(s) as string | undefined })),
      weight: 3,
    },
    {
      arbitrary: fc
        .constantFrom(
          '..%2F..%2Fetc%2Fpasswd',
          '..',
          '.',
          'a%00b',
          'a%0Ab',
          '%E2%80%AEgnp.exe',
          '%E0%A4%A',
          '%',
          'a%2Fb',
          'a\\b',
          ' ',
          '',
        )
        .map((v) => ({ tag: 'file:bad', v: v as string | undefined })),
      weight: 3,
    },
    { arbitrary: fc.constant({ tag: 'file:missing', v: undefined as string | undefined }), weight: 1 },
    {
      arbitrary: fc
        .integer({ max: 6000, min: 256 })
        .map((n) => ({ tag: 'file:long', v: 'n'.repeat(n) as string | undefined })),
      weight: 1,
    },
    {
      arbitrary: fc
        .constantFrom('设计稿.md', 'naïve.txt')
        .map((s) => ({ tag: 'file:raw-utf8', v: utf8Header(s) as string | undefined })),
      weight: 1,
    },
  );
  const bytes = fc.oneof(
    { arbitrary: fc.uint8Array({ maxLength: 4096 }).map((b) => Buffer.from(b)), weight: 6 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.concat([PNG, Buffer.from(b)])), weight: 2 },
    { arbitrary: fc.constant(Buffer.alloc(0)), weight: 1 },
    { arbitrary: fc.constant(Buffer.from('{"provider":"codex","title":"json to a raw route"}')), weight: 1 },
    { arbitrary: fc.constant(Buffer.alloc(1_100_000, 0x62)), weight: 1 },
  );
  if (clean) {
    return fc
      .tuple(
        fc.constantFrom('a.txt', 'shot.png', encodeURIComponent('设计稿 v2.md')),
        fc.uint8Array({ maxLength: 2048 }),
      )
      .map(([name, b]): BodyDraft => ({
        body: Buffer.from(b),
        contentType: 'application/octet-stream',
        extraHeaders: { 'X-File-Name': name },
        tags: ['file:plain', 'upload:bytes'],
      }));
  }
  const contentType = fc.constantFrom(
    undefined,
    'application/octet-stream',
    'image/png',
    'text/plain',
    'application/json',
    'text/html',
    'image/svg+xml',
    'garbage/\u00ff',
  );
  return fc.tuple(fileName, bytes, contentType).map(([name, body, ct]): BodyDraft => ({
    big: body.length > 500_000,
    body,
    contentType: ct,
    extraHeaders: name.v === undefined ? ({} as Record<string, string>) : { 'X-File-Name': name.v },
    tags: [name.tag, body.length > 500_000 ? 'upload:big' : 'upload:bytes'],
  }));
}

function webhookBody(): fc.Arbitrary<BodyDraft> {
  return fc
    .tuple(
      fc.oneof(
        fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
        fc.uint8Array({ maxLength: 1024 }).map((b) => Buffer.from(b)),
      ),
      fc.constantFrom(undefined, 'sha256=00', `sha256=${'0'.repeat(64)}`, 'sha1=abc', 'garbage', ''),
      fc.constantFrom(undefined, 'pull_request', 'ping', 'check_suite', 'pull_request_review', '../../x', ''),
      fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined),
    )
    .map(([body, sig, event, ct]) => {
      const extraHeaders: Record<string, string> = {};
      if (sig !== undefined) {
        extraHeaders['X-Hub-Signature-256'] = sig;
      }
      if (event !== undefined) {
        extraHeaders['X-GitHub-Event'] = event;
        extraHeaders['X-GitHub-Delivery'] = UUID0;
      }
      return { body, contentType: ct, extraHeaders, tags: ['webhook'] };
    });
}

// ---------------------------------------------------------------------------------------------
// Headers

type AuthKind = 'token' | 'none' | 'bad';
interface HeaderDraft {
  headers: Record<string, string>;
  auth: AuthKind;
  hostBad: boolean;
  originBad: boolean;
  lowLevel: boolean;
  tags: string[];
}

function headerDraft(target: FuzzTarget, op: Operation, clean: boolean): fc.Arbitrary<HeaderDraft> {
  if (clean) {
    return fc.constant({
      auth: 'token' as AuthKind,
      headers: { Authorization: `Bearer ${target.token}`, Connection: 'close' },
      hostBad: false,
      lowLevel: false,
      originBad: false,
      tags: ['auth:token'],
    });
  }
  const agentRoute = op.path.startsWith('/api/agent/');
  const auth = fc.oneof(
    {
      arbitrary: fc.constant({
        auth: 'token' as AuthKind,
        tag: 'auth:token',
        value: `Bearer ${target.token}` as string | undefined,
      }),
      weight: agentRoute ? 20 : 80,
    },
    // HTTP strips trailing whitespace from header values: this one is the valid token.
    {
      arbitrary: fc.constant({
        auth: 'token' as AuthKind,
        tag: 'auth:token-trailing-space',
        value: `Bearer ${target.token} \t` as string | undefined,
      }),
      weight: 1,
    },
    {
      arbitrary: fc.constant({ auth: 'none' as AuthKind, tag: 'auth:none', value: undefined as string | undefined }),
      weight: 3,
    },
    {
      arbitrary: fc
        .string({ maxLength: 64, minLength: 64, unit: fc.constantFrom(...'0123456789abcdef') })
        .map((h) => ({ auth: 'bad' as AuthKind, tag: 'auth:wrong-token', value: `Bearer ${h}` as string | undefined })),
      weight: 3,
    },
    {
      arbitrary: fc
        .oneof(
          fc.string({ maxLength: 60 }).map((s) => `amr_${s.replace(/[^A-Za-z0-9_]/g, '')}`),
          fc.constantFrom('amr_', `amr_${'A'.repeat(196)}`, `amr_${'x'.repeat(300)}`, 'amr_../../x'),
        )
        .map((t) => ({
          auth: 'bad' as AuthKind,
          tag: 'auth:run-token-garbage',
          value: `Bearer ${t}` as string | undefined,
        })),
      weight: agentRoute ? 70 : 5,
    },
    {
      arbitrary: fc
        .constantFrom(
          'Basic dXNlcjpwYXNz',
          'Bearer',
          'Bearer ',
          'Bearer a b',
          `bearer ${target.token}`,
          `Bearer\t${target.token}`,
          `Bearer ${'a'.repeat(5000)}`,
          'Bearer ../../etc/passwd',
          '',
          'Bearer null',
          `Token ${target.token}`,
        )
        .map((value) => ({ auth: 'bad' as AuthKind, tag: 'auth:malformed', value: value as string | undefined })),
      weight: 4,
    },
    {
      arbitrary: nastyString.map((s) => ({
        auth: 'bad' as AuthKind,
        tag: 'auth:unicode',
        value: utf8Header(`Bearer ${s}`) as string | undefined,
      })),
      weight: 2,
    },
  );
  const host = fc.oneof(
    { arbitrary: fc.constant({ bad: false, value: undefined as string | undefined }), weight: 40 },
    {
      arbitrary: fc
        .constantFrom(
          `localhost:${target.port}`,
          `[::1]:${target.port}`,
          'localhost',
          `LOCALHOST:${target.port}`,
          '127.0.0.1',
        )
        .map((value) => ({ bad: false, value: value as string | undefined })),
      weight: 3,
    },
    {
      arbitrary: fc
        .constantFrom(
          'evil.example',
          `127.0.0.1.evil.example:${target.port}`,
          `127.0.0.1:999999`,
          '[::1',
          `${'a'.repeat(400)}`,
          'localhost:abc',
          '127.0.0.1:80:80',
          utf8Header('lоcalhost'),
          '..',
          '@',
          ' ',
        )
        .map((value) => ({ bad: true, value: value as string | undefined })),
      weight: 3,
    },
  );
  const originArb = fc.oneof(
    { arbitrary: fc.constant({ kind: 'none' as const, value: '' }), weight: 40 },
    { arbitrary: fc.constant({ kind: 'same' as const, value: '' }), weight: 2 },
    {
      arbitrary: fc
        .constantFrom(
          'https://evil.example',
          'null',
          `http://localhost:${target.port}.evil.example`,
          'http://localhost:4200',
          utf8Header('http://ünï.example'),
          '',
        )
        .map((value) => ({ kind: 'bad' as const, value })),
      weight: 3,
    },
  );
  const extras = fc.oneof(
    { arbitrary: fc.constant({ headers: {} as Record<string, string>, lowLevel: false, tag: '' }), weight: 30 },
    {
      arbitrary: fc
        .integer({ max: 40_000, min: 17_000 })
        .map((n) => ({ headers: { 'X-Junk': 'j'.repeat(n) }, lowLevel: true, tag: 'header:oversized' })),
      weight: 1,
    },
    {
      arbitrary: nastyString.map((s) => ({
        headers: { 'X-Unicode': utf8Header(s.replace(/[\r\n\u0000]/g, '')) },
        lowLevel: false,
        tag: 'header:unicode',
      })),
      weight: 2,
    },
    {
      arbitrary: fc
        .constantFrom(
          'am_session_1=x',
          `am_session_${target.port}=${'c'.repeat(9000)}`,
          `am_session_${target.port}=garbage; a=b`,
          ';;;==;',
        )
        .map((c) => ({ headers: { Cookie: c }, lowLevel: false, tag: 'header:cookie' })),
      weight: 2,
    },
    {
      arbitrary: fc
        .constantFrom('text/html', '*/*', 'application/xml', 'text/event-stream', utf8Header('ä/ö'))
        .map((a) => ({ headers: { Accept: a }, lowLevel: false, tag: 'header:accept' })),
      weight: 2,
    },
    {
      arbitrary: fc
        .constantFrom('100-continue', 'nonsense')
        .map((e) => ({ headers: { Expect: e }, lowLevel: true, tag: 'header:expect' })),
      weight: 1,
    },
  );
  return fc.tuple(auth, host, originArb, extras).map(([a, h, o, x]) => {
    const headers: Record<string, string> = { Connection: 'close', ...x.headers };
    if (a.value !== undefined) {
      headers.Authorization = a.value;
    }
    if (h.value !== undefined) {
      headers.Host = h.value;
    }
    const hostValue = h.value ?? `127.0.0.1:${target.port}`;
    if (o.kind === 'same') {
      headers.Origin = `http://${hostValue}`;
    } else if (o.kind === 'bad') {
      headers.Origin = o.value;
    }
    const tags = [a.tag];
    if (h.value !== undefined) {
      tags.push(h.bad ? 'host:bad' : 'host:odd-ok');
    }
    if (o.kind !== 'none') {
      tags.push(`origin:${o.kind}`);
    }
    if (x.tag) {
      tags.push(x.tag);
    }
    return { auth: a.auth, headers, hostBad: h.bad, lowLevel: x.lowLevel, originBad: o.kind === 'bad', tags };
  });
}

// ---------------------------------------------------------------------------------------------
// Requests

/** The routes without credentials, as the server lists them (both forges' webhooks among them). */
const PUBLIC = PUBLIC_ROUTES;
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the security layers must answer, when the request makes that knowable. */
function expectedStatus(method: string, pathAndQuery: string, h: HeaderDraft, lowLevel: boolean): number | undefined {
  if (lowLevel) {
    return undefined;
  }
  if (h.hostBad) {
    return 403;
  }
  if (method === 'OPTIONS') {
    return 403;
  }
  if (UNSAFE.has(method) && h.originBad) {
    return 403;
  }
  const [pathOnly = '', query = ''] = pathAndQuery.split('?', 2);
  if (PUBLIC.has(`${method} ${pathOnly}`) || !(pathOnly === '/api' || pathOnly.startsWith('/api/'))) {
    return undefined;
  }
  if (new URLSearchParams(query).has('token') || new URLSearchParams(query).has('access_token')) {
    return 401;
  }
  if (h.auth !== 'token') {
    return 401;
  }
  // The owner passes on the agent API too (acting for the Requirement a request names); the
  // run-bound context endpoint's 403 comes after the body is read, so a bad body may answer 400
  // first (run-credentials.e2e-spec checks that 403).
  return undefined;
}

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

/** Requests for one OpenAPI operation. */
/**
 * Requests for one OpenAPI operation: mostly corrupted in one or more ways, and some clean ones
 * (valid token, real IDs, schema-valid bodies) so that the handlers' own logic runs and state
 * changes (starts, replies, interrupts, deletes) race with the corrupted traffic.
 */
export function operationArbitrary(op: Operation, target: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { arbitrary: requestFor(op, target, true).map((r) => ({ ...r, tags: ['mode:clean', ...r.tags] })), weight: 3 },
    { arbitrary: requestFor(op, target, false), weight: 7 },
  );
}

function requestFor(op: Operation, target: FuzzTarget, clean: boolean): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const segments = fc.tuple(...pathParams.map((p) => idSegment(paramKind(op, p.name), clean)));
  const query = fc.tuple(
    fc.subarray(queryParams).chain((chosen) => fc.tuple(...chosen.map((p) => queryValue(op, p, clean)))),
    clean
      ? fc.constant([] as string[])
      : fc.oneof(
          { arbitrary: fc.constant([] as string[]), weight: 12 },
          {
            arbitrary: fc
              .tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }))
              .map(([k, v]) => [`${encodeLoose(k || 'x')}=${encodeLoose(v)}`]),
            weight: 2,
          },
          {
            arbitrary: fc.constantFrom(
              ['token=abc'],
              ['access_token=abc'],
              [`token=${target.token}`],
              ['a=1&a=2&a=3'],
              ['%ZZ=1'],
              ['=', '&&'],
              ['limit'],
            ),
            weight: 1,
          },
        ),
  );
  const body: fc.Arbitrary<BodyDraft> =
    op.body?.kind === 'json'
      ? jsonBody(op.body.schema, clean)
      : op.body?.kind === 'binary'
        ? binaryBody(clean)
        : op.body?.kind === 'raw'
          ? webhookBody()
          : clean
            ? fc.constant<BodyDraft>({ extraHeaders: {}, tags: [] })
            : fc.oneof(
                { arbitrary: fc.constant({ extraHeaders: {}, tags: [] } as BodyDraft), weight: 12 },
                {
                  arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => ({
                    body: Buffer.from(JSON.stringify(v) ?? 'null'),
                    contentType: 'application/json',
                    extraHeaders: {},
                    tags: ['body:unexpected'],
                  })),
                  weight: 1,
                },
                { arbitrary: notJson, weight: 1 },
              );
  const method = clean
    ? fc.constant(op.method)
    : fc.oneof(
        { arbitrary: fc.constant(op.method), weight: 25 },
        { arbitrary: fc.constantFrom(...OTHER_METHODS), weight: 1 },
      );
  const lastEventId =
    op.path === '/api/events' && clean
      ? fc.option(fc.nat({ max: 100 }).map(String), { freq: 2 })
      : op.path === '/api/events'
        ? fc.option(
            fc.oneof(
              fc.nat().map(String),
              fc.constantFrom(
                '-1',
                '1e5',
                'abc',
                '',
                ' 12 ',
                '9'.repeat(40),
                '0x10',
                '1.5',
                `${'7'.repeat(15)}`,
                '9007199254740993',
              ),
              nastyString.map((s) => utf8Header(s.replace(/[\r\n\u0000]/g, ''))),
            ),
            { freq: 2 },
          )
        : fc.constant(null);
  return fc
    .tuple(method, segments, query, body, headerDraft(target, op, clean), lastEventId)
    .map(([m, segs, [qs, extra], b, h, lei]) => {
      let p = op.path;
      const tags = [...h.tags, ...b.tags];
      pathParams.forEach((param, i) => {
        const seg = segs[i];
        if (seg) {
          p = p.replace(`{${param.name}}`, seg.value);
          tags.push(seg.tag);
        }
      });
      const parts = [...qs.flatMap((q) => q.parts), ...extra];
      for (const q of qs) {
        tags.push(q.tag);
      }
      if (extra.length > 0) {
        tags.push('query:extra');
      }
      const pathAndQuery = parts.length > 0 ? `${p}?${parts.join('&')}` : p;
      const headers: Record<string, string> = { ...h.headers, ...b.extraHeaders };
      if (b.contentType !== undefined && b.contentType !== '') {
        headers['Content-Type'] = b.contentType;
      }
      if (lei !== null) {
        headers['Last-Event-ID'] = lei;
        tags.push('header:last-event-id');
      }
      if (m !== op.method) {
        tags.push(`method:${m}`);
      }
      const lowLevel = h.lowLevel || pathAndQuery.length > 8000 || Object.values(headers).some((v) => v.length > 8000);
      return {
        body: m === 'GET' || m === 'HEAD' ? (b.body && b.body.length < 10_000 ? b.body : undefined) : b.body,
        endpoint: op.label,
        expectStatus: expectedStatus(m, pathAndQuery, h, lowLevel),
        headers,
        lowLevel,
        method: m,
        path: pathAndQuery,
        tags,
      };
    });
}

/** Requests off the map: unknown routes, odd prefixes, malformed HTTP on the wire. */
export function offMapArbitrary(target: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const auth = { Authorization: `Bearer ${target.token}`, Connection: 'close' };
  const unknownRoute = fc
    .tuple(
      fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
      fc.oneof(
        fc.constantFrom(
          '/api',
          '/api/',
          '/api/nope',
          '/api/requirements/x/y/z',
          '/api//requirements',
          '/api/requirements/%2e%2e/health',
          '/api/%00',
          '/API/requirements',
          '/api/requirements;x',
          '/api/health/',
          '/api/agent',
          '/api/events/x',
          '/api/./requirements',
        ),
        fc.string({ maxLength: 30 }).map((s) => `/api/${encodeLoose(s)}`),
      ),
    )
    .map(([method, p]): FuzzRequest => ({
      endpoint: 'OFF-MAP unknown route',
      headers: auth,
      method,
      path: p,
      tags: ['route:unknown'],
    }));
  const raw = fc
    .constantFrom(
      'GARBAGE\r\n\r\n',
      'GET /api/health HTTP/9.9\r\n\r\n',
      'GET /api/requirements HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer x\r\nAuthorization: Bearer y\r\n\r\n',
      'POST /api/requirements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'POST /api/requirements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n',
      'GET /api/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
      'GET /api/health HTTP/1.1\r\nX: \u0000\r\n\r\n',
      `GET /api/requirements HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\nAuthorization: Bearer ${target.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      '\r\n\r\n\r\n',
      'GET http://evil.example/api/requirements HTTP/1.1\r\nHost: evil.example\r\n\r\n',
    )
    .map((text): FuzzRequest => ({
      endpoint: 'OFF-MAP raw socket',
      headers: {},
      lowLevel: true,
      method: 'RAW',
      path: JSON.stringify(text.slice(0, 60)),
      raw: Buffer.from(text, 'latin1'),
      tags: ['raw'],
    }));
  return fc.oneof({ arbitrary: unknownRoute, weight: 4 }, { arbitrary: raw, weight: 1 });
}

/** `perOperation` requests for every operation plus some off the map, interleaved round-robin. */
export function generateRequests(
  operations: Operation[],
  target: FuzzTarget,
  perOperation: number,
  seed: number,
): FuzzRequest[] {
  const lists = operations.map((op, i) =>
    fc.sample(operationArbitrary(op, target), { numRuns: perOperation, seed: seed + i }),
  );
  lists.push(fc.sample(offMapArbitrary(target), { numRuns: Math.ceil(perOperation / 2), seed: seed - 1 }));
  const out: FuzzRequest[] = [];
  const longest = Math.max(...lists.map((l) => l.length));
  for (let i = 0; i < longest; i++) {
    for (const list of lists) {
      const request = list[i];
      if (request) {
        out.push(request);
      }
    }
  }
  return out;
}
