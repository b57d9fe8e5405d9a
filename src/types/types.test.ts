/**
 * Unit tests of the type language (src/types): every rule of the contract in api.ts, one at a time.
 * Each validation assertion checks both paths: `check` (ajv fast path + JSON walk) and `issues` (the
 * precise walker), which must always agree.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, test } from 'vitest';
import type { CompiledType, ValueIssue } from './api.js';
import { compileTypes, isJsonValue, parseTypeExpr, PRIMITIVES } from './index.js';

const TYPES = {
  Finding: { source: 'string', content: 'string', confidence: 'number', tags: { type: 'string[]', required: false } },
  Level: { enum: ['low', 'medium', 'high'] },
  Money: 'number',
  Cash: 'Money',
  Price: 'Cash',
  Findings: 'Finding[]',
  Owner: 'string | null',
  Severity: 'Level',
  Summary: { title: 'string', words: 'integer' },
  Report: {
    summary: 'Summary',
    findings: 'array<Finding>',
    level: 'Level',
    owner: 'Owner',
    total: 'Price',
    reviewer: { type: 'string', nullable: true },
    note: { type: 'string', required: false },
    severity: { enum: [1, 2, 3], required: false },
  },
  Tree: { name: 'string', children: 'Tree[]' },
  Ping: { next: 'Pong | null', n: 'integer' },
  Pong: { back: 'Ping[]' },
  Org: { teams: 'Team[]' },
  Team: { name: 'string', members: 'array<Person>' },
  Person: { name: 'string', tags: 'Level[]', boss: 'Person | null' },
  Weird: { 'a/b': 'number', 'm~n': 'string', 'x y': 'boolean', constructor: 'any', toString: { type: 'string', required: false } },
  Chain1: 'Chain2 | null',
  Chain2: 'Chain3 | null',
  Chain3: { deep: 'string' },
  Flags: { enum: [true] },
  Mixed: { enum: ['1', 1, false] },
  'x-ignored': 'nonsense<',
};

function compiled(block: unknown = TYPES) {
  const r = compileTypes(block, ['types']);
  expect(r.diagnostics).toEqual([]);
  return r.registry;
}

const reg = compiled();

function type(expr: unknown): CompiledType {
  const r = reg.compile(expr, ['x']);
  expect(r.diagnostics).toEqual([]);
  return r.type!;
}

function fits(t: CompiledType, v: unknown): void {
  expect(t.issues(v), `${t.text} should accept ${show(v)}`).toEqual([]);
  expect(t.check(v), `${t.text} should accept ${show(v)}`).toBe(true);
}

function rejects(t: CompiledType, v: unknown): ValueIssue[] {
  const issues = t.issues(v);
  expect(t.check(v), `${t.text} should reject ${show(v)}`).toBe(false);
  expect(issues.length, `${t.text} should report an issue for ${show(v)}`).toBeGreaterThan(0);
  return issues;
}

function show(v: unknown): string {
  try {
    return typeof v === 'number' || typeof v === 'undefined' || typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint' ? String(v) : JSON.stringify(v);
  } catch {
    return String(v);
  }
}

const brief = (issues: ValueIssue[]) => issues.map((i) => [i.pointer, i.kind, i.expected, i.actual]);

/** One value of each JSON kind, with its JSON type name. */
const KINDS: [string, unknown][] = [
  ['string', 'text'],
  ['number', 1.5],
  ['integer', 7],
  ['boolean', true],
  ['null', null],
  ['object', { a: 1 }],
  ['array', [1, 'a']],
];
const ACCEPTS: Record<string, string[]> = {
  string: ['string'],
  number: ['number', 'integer'],
  integer: ['integer'],
  boolean: ['boolean'],
  object: ['object'],
  array: ['array'],
  any: ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'],
};
const jsonName = (kind: string) => (kind === 'integer' ? 'number' : kind);

class Point {
  constructor(
    readonly x = 1,
    readonly y = 2,
  ) {}
}
/** Values that are not JSON, with the `actual` name the walker gives them. */
const NOT_JSON: [string, unknown][] = [
  ['non-finite number', NaN],
  ['non-finite number', Infinity],
  ['non-finite number', -Infinity],
  ['undefined', undefined],
  ['function', () => 1],
  ['non-plain object', new Date(0)],
  ['non-plain object', new Point()],
  ['non-plain object', new Map([['a', 1]])],
  ['non-plain object', Object(5) as unknown],
  ['symbol', Symbol('s')],
  ['bigint', 10n],
];

describe('primitives', () => {
  test('every primitive is declared', () => {
    expect([...PRIMITIVES]).toEqual(['string', 'number', 'integer', 'boolean', 'object', 'array', 'any', 'null']);
  });

  describe.each(Object.keys(ACCEPTS))('%s', (prim) => {
    const t = type(prim);

    test('accepts its own JSON kinds, rejects every other kind with one precise issue', () => {
      expect(t.text).toBe(prim);
      for (const [kind, value] of KINDS) {
        if (ACCEPTS[prim]!.includes(kind)) fits(t, value);
        else expect(brief(rejects(t, value)), `${prim} vs ${kind}`).toEqual([['', 'type', prim, jsonName(kind)]]);
      }
    });

    test('rejects every value that is not JSON, naming it', () => {
      for (const [actual, value] of NOT_JSON) expect(brief(rejects(t, value)), `${prim} vs ${String(actual)}`).toEqual([['', 'not-json', prim, actual]]);
    });
  });

  test('no coercion: strings of numbers, numbers for booleans, booleans for numbers', () => {
    expect(brief(rejects(type('number'), '5'))).toEqual([['', 'type', 'number', 'string']]);
    expect(brief(rejects(type('number'), true))).toEqual([['', 'type', 'number', 'boolean']]);
    expect(brief(rejects(type('integer'), '5'))).toEqual([['', 'type', 'integer', 'string']]);
    expect(brief(rejects(type('boolean'), 1))).toEqual([['', 'type', 'boolean', 'number']]);
    expect(brief(rejects(type('boolean'), 0))).toEqual([['', 'type', 'boolean', 'number']]);
    expect(brief(rejects(type('boolean'), 'true'))).toEqual([['', 'type', 'boolean', 'string']]);
    expect(brief(rejects(type('string'), 5))).toEqual([['', 'type', 'string', 'number']]);
    expect(brief(rejects(type('array'), { 0: 'a', length: 1 }))).toEqual([['', 'type', 'array', 'object']]);
    expect(brief(rejects(type('object'), []))).toEqual([['', 'type', 'object', 'array']]);
  });

  test('integer vs number: an integer passes as number; a fraction is not an integer', () => {
    for (const v of [0, -0, 3, -12, 1e21, Number.MAX_SAFE_INTEGER, 2 ** 60]) {
      fits(type('integer'), v);
      fits(type('number'), v);
    }
    for (const v of [0.5, -1.25, 0.1 + 0.2, Number.EPSILON]) {
      fits(type('number'), v);
      expect(brief(rejects(type('integer'), v))).toEqual([['', 'type', 'integer', 'number']]);
    }
    fits(type('number'), Number.MAX_VALUE);
    fits(type('number'), -Number.MIN_VALUE);
  });

  test('null matches only `any`, `null` and nullable types', () => {
    fits(type('any'), null);
    fits(type('null'), null);
    rejects(type('null'), 0);
    for (const t of ['string', 'number', 'integer', 'boolean', 'object', 'array', 'Finding', 'Level', 'Money', 'Finding[]', 'Tree']) {
      expect(brief(rejects(type(t), null)), t).toEqual([['', t === 'Level' ? 'enum' : 'type', t, 'null']]);
    }
  });

  test('messages name the place, the expected type and what came back', () => {
    expect(type('number').issues('5')[0]!.message).toBe('the value: expected number, got string "5"');
    expect(type('boolean').issues(null)[0]!.message).toBe('the value: expected boolean, got null');
    expect(type('string').issues({})[0]!.message).toBe('the value: expected string, got object');
    expect(type('number').issues(NaN)[0]!.message).toBe('the value: expected number, got non-finite number (not JSON)');
    expect(type('Summary').issues({ title: 't', words: 1.5 })[0]!.message).toBe('`/words`: expected integer, got number 1.5');
  });
});

describe('deep JSON-ness: no undefined elements, functions, Date, class instances, NaN anywhere', () => {
  const containers = ['any', 'object', 'array', 'Finding', 'Finding[]'];
  test.each([
    ['any', [1, undefined], '/1', 'undefined'],
    ['any', { a: { b: [1, NaN] } }, '/a/b/1', 'non-finite number'],
    ['any', { when: new Date(0) }, '/when', 'non-plain object'],
    ['object', { f: () => 1 }, '/f', 'function'],
    ['object', { p: new Point() }, '/p', 'non-plain object'],
    ['array', [Infinity], '/0', 'non-finite number'],
    ['array', [[1, [2, -Infinity]]], '/0/1/1', 'non-finite number'],
    ['Finding', { source: 's', content: 'c', confidence: 1, extra: { x: 1n } }, '/extra/x', 'bigint'],
    ['Finding[]', [{ source: 's', content: 'c', confidence: NaN }], '/0/confidence', 'non-finite number'],
    ['string[]', ['a', undefined], '/1', 'undefined'],
    ['Tree', { name: 'r', children: [{ name: 'c', children: [], meta: Symbol('m') }] }, '/children/0/meta', 'symbol'],
  ])('%s: %#', (t, value, pointer, actual) => {
    expect(rejects(type(t), value)).toEqual([expect.objectContaining({ pointer, kind: 'not-json', actual })]);
  });

  test('holes in arrays are not JSON', () => {
    const sparse = [1, , 3];
    expect(brief(rejects(type('array'), sparse))).toEqual([['/1', 'not-json', 'any', 'undefined']]);
    expect(brief(rejects(type('integer[]'), sparse))).toEqual([['/1', 'not-json', 'integer', 'undefined']]);
    expect(brief(rejects(type('any'), new Array(2)))).toEqual([
      ['/0', 'not-json', 'any', 'undefined'],
      ['/1', 'not-json', 'any', 'undefined'],
    ]);
  });

  test('an object member that is undefined is absent (as in JSON), not an error', () => {
    for (const t of containers.slice(0, 2)) fits(type(t), { a: 1, b: undefined });
    fits(type('Finding'), { source: 's', content: 'c', confidence: 1, tags: undefined });
  });

  test('null-prototype objects are plain JSON objects', () => {
    const o = Object.assign(Object.create(null) as object, { source: 's', content: 'c', confidence: 1 });
    fits(type('Finding'), o);
    fits(type('object'), o);
  });

  test('isJsonValue', () => {
    for (const [, v] of KINDS) expect(isJsonValue(v)).toBe(true);
    for (const [, v] of NOT_JSON) expect(isJsonValue(v)).toBe(false);
    expect(isJsonValue({ a: [{ b: null }] })).toBe(true);
    expect(isJsonValue({ a: [{ b: NaN }] })).toBe(false);
  });
});

describe('enums', () => {
  test('only members, compared without coercion', () => {
    const level = type('Level');
    for (const v of ['low', 'medium', 'high']) fits(level, v);
    for (const v of ['LOW', 'Low ', '', 'urgent']) expect(brief(rejects(level, v))).toEqual([['', 'enum', 'Level', 'string']]);
    expect(brief(rejects(level, 1))).toEqual([['', 'enum', 'Level', 'number']]);
    expect(brief(rejects(level, null))).toEqual([['', 'enum', 'Level', 'null']]);
    expect(brief(rejects(level, ['low']))).toEqual([['', 'enum', 'Level', 'array']]);
    expect(brief(rejects(level, { low: true }))).toEqual([['', 'enum', 'Level', 'object']]);
    expect(brief(rejects(level, NaN))).toEqual([['', 'not-json', 'Level', 'non-finite number']]);
    expect(brief(rejects(level, undefined))).toEqual([['', 'not-json', 'Level', 'undefined']]);
  });

  test('number, boolean and mixed enums', () => {
    const mixed = type('Mixed');
    for (const v of ['1', 1, false]) fits(mixed, v);
    for (const v of [true, 0, '0', 'false', 1.5]) rejects(mixed, v);
    fits(type('Flags'), true);
    rejects(type('Flags'), false);
    rejects(type('Flags'), 1);
    const inline = type({ enum: [1, 2.5, -3] });
    expect(inline.text).toBe('1 | 2.5 | -3');
    fits(inline, 2.5);
    expect(brief(rejects(inline, '1'))).toEqual([['', 'enum', '1 | 2.5 | -3', 'string']]);
    expect(inline.issues(4)[0]!.message).toBe('the value: expected one of 1 | 2.5 | -3, got 4');
  });

  test('an aliased enum and an enum field report the type as written', () => {
    expect(brief(rejects(type('Severity'), 'x'))).toEqual([['', 'enum', 'Severity', 'string']]);
    expect(brief(rejects(type('Report'), { ...goodReport(), severity: 4 }))).toEqual([['/severity', 'enum', '1 | 2 | 3', 'number']]);
  });
});

function goodReport(): Record<string, unknown> {
  return {
    summary: { title: 'Q3', words: 120 },
    findings: [
      { source: 'a', content: 'x', confidence: 0.9 },
      { source: 'b', content: 'y', confidence: 1, tags: ['t'] },
    ],
    level: 'high',
    owner: null,
    total: 10,
    reviewer: 'rev',
  };
}

describe('records: optional fields, nullable, open, deep', () => {
  test('a fitting record, with extra fields (records are open)', () => {
    fits(type('Report'), goodReport());
    fits(type('Report'), { ...goodReport(), note: 'n', severity: 2, extra: { any: ['json'] } });
  });

  test('every field of a named type is validated, deeply, all issues reported in order', () => {
    const bad = {
      summary: { title: 5, words: '3' },
      findings: [{ source: 's', content: 'c', confidence: '0.9' }, { source: 1, content: 'c', tags: ['a', 2] }, 'nope'],
      level: 'urgent',
      owner: 3,
      total: '10',
      reviewer: false,
    };
    expect(brief(rejects(type('Report'), bad))).toEqual([
      ['/summary/title', 'type', 'string', 'number'],
      ['/summary/words', 'type', 'integer', 'string'],
      ['/findings/0/confidence', 'type', 'number', 'string'],
      ['/findings/1/source', 'type', 'string', 'number'],
      ['/findings/1/confidence', 'required', 'number', 'undefined'],
      ['/findings/1/tags/1', 'type', 'string', 'number'],
      ['/findings/2', 'type', 'Finding', 'string'],
      ['/level', 'enum', 'Level', 'string'],
      ['/owner', 'type', 'Owner', 'number'],
      ['/total', 'type', 'Price', 'string'],
      ['/reviewer', 'type', 'string | null', 'boolean'],
    ]);
  });

  test('optional fields may be absent (or undefined) but not null or mistyped', () => {
    const r = type('Report');
    fits(r, { ...goodReport(), note: undefined });
    expect(brief(rejects(r, { ...goodReport(), note: null }))).toEqual([['/note', 'type', 'string', 'null']]);
    expect(brief(rejects(r, { ...goodReport(), note: 1 }))).toEqual([['/note', 'type', 'string', 'number']]);
  });

  test('nullable fields may be null but must be present; `nullable: true` and `T | null` are the same', () => {
    const r = type('Report');
    fits(r, { ...goodReport(), reviewer: null, owner: 'me' });
    const { reviewer: _r, owner: _o, ...rest } = goodReport();
    expect(brief(rejects(r, rest))).toEqual([
      ['/owner', 'required', 'Owner', 'undefined'],
      ['/reviewer', 'required', 'string | null', 'undefined'],
    ]);
    expect(type({ type: 'string', nullable: true }).text).toBe('string | null');
    expect(type({ type: 'string | null', nullable: true }).text).toBe('string | null');
    rejects(type({ type: 'string', nullable: false }), null);
    fits(type({ type: 'Finding', nullable: true }), null);
    expect(brief(rejects(type('Finding | null'), 5))).toEqual([['', 'type', 'Finding | null', 'number']]);
    fits(type('Finding | null'), { source: 's', content: 'c', confidence: 0 });
  });

  test('a required field is missing when absent or undefined; the issue says which type was expected', () => {
    expect(rejects(type('Summary'), { title: 't', words: undefined })).toEqual([
      { pointer: '/words', kind: 'required', expected: 'integer', actual: 'undefined', message: '`/words`: required field `words` (integer) is missing' },
    ]);
    expect(brief(rejects(type('Summary'), {}))).toEqual([
      ['/title', 'required', 'string', 'undefined'],
      ['/words', 'required', 'integer', 'undefined'],
    ]);
  });

  test('a record is a plain object: not an array, a Date, a class instance', () => {
    for (const v of [[], 'x', 1, true]) expect(brief(rejects(type('Summary'), v))[0]!.slice(0, 3)).toEqual(['', 'type', 'Summary']);
    for (const v of [new Date(0), new Point(), new Map()]) expect(brief(rejects(type('Summary'), v))).toEqual([['', 'not-json', 'Summary', 'non-plain object']]);
  });

  test('field names are JSON-Pointer escaped; prototype names are ordinary fields', () => {
    const w = type('Weird');
    const good = { 'a/b': 1, 'm~n': 's', 'x y': true, constructor: null };
    fits(w, good);
    fits(w, { ...good, toString: 'own' });
    expect(brief(rejects(w, { 'a/b': 'x', 'm~n': 1, 'x y': true, constructor: 1 }))).toEqual([
      ['/a~1b', 'type', 'number', 'string'],
      ['/m~0n', 'type', 'string', 'number'],
    ]);
    // `constructor` and `toString` are not found on Object.prototype: absent means absent
    expect(brief(rejects(w, { 'a/b': 1, 'm~n': 's', 'x y': true }))).toEqual([['/constructor', 'required', 'any', 'undefined']]);
    expect(brief(rejects(w, { ...good, toString: 5 }))).toEqual([['/toString', 'type', 'string', 'number']]);
  });

  test('a field named `__proto__` (as JSON.parse makes it) is an own field', () => {
    const r = compiled({ P: JSON.parse('{"__proto__": "integer", "b": "string"}') as unknown });
    const p = r.compile('P', []).type!;
    fits(p, JSON.parse('{"__proto__": 1, "b": "x"}'));
    rejects(p, JSON.parse('{"__proto__": "1", "b": "x"}'));
    rejects(p, { b: 'x' });
    const schema = p.jsonSchema() as { $defs: { P: { properties: object; required: string[] } } };
    expect(Object.keys(schema.$defs.P.properties)).toEqual(['__proto__', 'b']);
    expect(schema.$defs.P.required).toEqual(['__proto__', 'b']);
  });

  test('inline records and the wrapper form in field and output positions', () => {
    const inline = type({ title: 'string', words: { type: 'integer', required: false } });
    expect(inline.text).toBe('{title: string, words?: integer}');
    fits(inline, { title: 't' });
    expect(brief(rejects(inline, { title: 't', words: 1.5 }))).toEqual([['/words', 'type', 'integer', 'number']]);
    expect(reg.compile({ type: 'string', required: false }, ['o'])).toMatchObject({ required: false, diagnostics: [] });
    expect(reg.compile({ enum: ['a'], required: false }, ['o'])).toMatchObject({ required: false, diagnostics: [] });
    expect(reg.compile('string', ['o'])).toMatchObject({ required: true });
    expect(reg.compile({ type: 'string', required: true, description: 'd', 'x-ui': 1 }, ['o'])).toMatchObject({ required: true, diagnostics: [] });
    const ev = type({ type: 'string', at: 'integer' }); // not a wrapper: `at` is no wrapper key
    fits(ev, { type: 'x', at: 1 });
  });

  test('JSON Schema written where a type goes (`{type: object, properties: {...}}`) is read as a record, and says so', () => {
    const r = reg.compile({ type: 'object', properties: { title: 'string' } }, ['o']);
    expect(r.diagnostics.map((d) => [d.severity, d.code, d.path])).toEqual([['warning', 'unknown-key', ['o', 'properties']]]);
    expect(r.diagnostics[0]!.hint).toContain('{title: string}');
    // a record whose fields happen to be named `type` and `properties`, both plain types: no such guess
    expect(reg.compile({ type: 'string', properties: 'string' }, ['o']).diagnostics).toEqual([]);
  });

  test('a JSON Schema keyword beside `type` (`minItems: 1`, `format: email`, `const: x`) fails as a type, and the hint says why', () => {
    for (const [raw, key, code] of [
      [{ type: 'array', items: 'string', minItems: 1 }, 'minItems', 'invalid-type'],
      [{ type: 'string', format: 'email' }, 'format', 'unknown-type'],
      [{ type: 'string', const: 'fast' }, 'const', 'unknown-type'],
    ] as const) {
      const r = reg.compile(raw, ['o']);
      expect(r.diagnostics.map((d) => [d.code, d.path]), key).toEqual([[code, ['o', key]]]);
      expect(r.diagnostics[0]!.hint, key).toContain(`\`${key}\` is a JSON Schema keyword`);
    }
    // a record with a field named `format` (no `type` beside it) keeps the usual hint
    expect(reg.compile({ title: 'string', format: 'emal' }, ['o']).diagnostics[0]!.hint).not.toContain('JSON Schema');
  });
});

describe('arrays: `array<T>` and `T[]`', () => {
  test('both syntaxes are the same type, shown as written canonically', () => {
    expect(type('array<Finding>').text).toBe('Finding[]');
    expect(type('list<Finding>').text).toBe('Finding[]');
    expect(type({ type: 'array', items: 'Finding' }).text).toBe('Finding[]');
    expect(type('array<array<integer>>').text).toBe('integer[][]');
    expect(type('array<string | null>').text).toBe('array<string | null>');
    expect(type('string[] | null').text).toBe('string[] | null');
    expect(type({ type: 'array', items: { enum: ['a', 'b'] } }).text).toBe('array<"a" | "b">');
    expect(type('array').text).toBe('array');
    expect(type('list').text).toBe('array');
    const a = type('array<Finding>');
    expect(type('Finding[]')).toBe(a); // one compiled type per canonical text
  });

  test('every element is validated, in both syntaxes', () => {
    const f = { source: 's', content: 'c', confidence: 1 };
    for (const t of ['Finding[]', 'array<Finding>', 'Findings']) {
      const ct = type(t);
      fits(ct, []);
      fits(ct, [f, f]);
      expect(brief(rejects(ct, [f, { ...f, confidence: 'high' }, f, null]))).toEqual([
        ['/1/confidence', 'type', 'number', 'string'],
        ['/3', 'type', 'Finding', 'null'],
      ]);
      expect(brief(rejects(ct, f))).toEqual([['', 'type', t === 'Findings' ? 'Findings' : 'Finding[]', 'object']]);
    }
  });

  test('nested arrays and nullable elements', () => {
    for (const t of ['integer[][]', 'array<array<integer>>', 'array<integer[]>', 'array<integer>[]']) {
      const ct = type(t);
      fits(ct, [[1, 2], [], [3]]);
      expect(brief(rejects(ct, [[1], [2, 2.5], 3]))).toEqual([
        ['/1/1', 'type', 'integer', 'number'],
        ['/2', 'type', 'integer[]', 'number'],
      ]);
    }
    const ne = type('array<string | null>');
    fits(ne, ['a', null]);
    expect(brief(rejects(ne, ['a', 1]))).toEqual([['/1', 'type', 'string | null', 'number']]);
    const na = type('string[] | null');
    fits(na, null);
    fits(na, ['a']);
    expect(brief(rejects(na, [null]))).toEqual([['/0', 'type', 'string', 'null']]);
    const ie = type({ type: 'array', items: { x: 'number' } });
    fits(ie, [{ x: 1 }]);
    expect(brief(rejects(ie, [{ x: '1' }]))).toEqual([['/0/x', 'type', 'number', 'string']]);
  });

  test('array of enums', () => {
    const t = type('Level[]');
    fits(t, ['low', 'high', 'low']);
    expect(brief(rejects(t, ['low', 'LOW']))).toEqual([['/1', 'enum', 'Level', 'string']]);
  });
});

describe('nested named types, recursion, aliases', () => {
  test('deep pointers through several named types', () => {
    const org = {
      teams: [
        { name: 'a', members: [] },
        {
          name: 'b',
          members: [
            { name: 'p', tags: ['low'], boss: null },
            { name: 'q', tags: [], boss: { name: 'r', tags: ['high', 'huge'], boss: null } },
          ],
        },
      ],
    };
    fits(type('Org'), { teams: [] });
    expect(brief(rejects(type('Org'), org))).toEqual([['/teams/1/members/1/boss/tags/1', 'enum', 'Level', 'string']]);
  });

  test('a recursive record is legal and validated at every depth', () => {
    const tree = type('Tree');
    const leaf = (name: string) => ({ name, children: [] });
    fits(tree, { name: 'r', children: [leaf('a'), { name: 'b', children: [leaf('c'), { name: 'd', children: [leaf('e')] }] }] });
    expect(brief(rejects(tree, { name: 'r', children: [{ name: 'b', children: [{ name: 'd', children: [{ name: 5, children: [] }, { name: 'x' }] }] }] }))).toEqual([
      ['/children/0/children/0/children/0/name', 'type', 'string', 'number'],
      ['/children/0/children/0/children/1/children', 'required', 'Tree[]', 'undefined'],
    ]);
    let deep: { name: string; children: unknown[] } = leaf('bottom');
    for (let i = 0; i < 200; i++) deep = { name: `n${i}`, children: [deep] };
    fits(tree, deep);
  });

  test('mutually recursive records', () => {
    const ping = type('Ping');
    fits(ping, { next: { back: [{ next: null, n: 2 }] }, n: 1 });
    expect(brief(rejects(ping, { next: { back: [{ next: { back: 'x' }, n: 2 }] }, n: 1 }))).toEqual([['/next/back/0/next/back', 'type', 'Ping[]', 'string']]);
  });

  test('alias chains resolve to their base and are reported as written', () => {
    for (const t of ['Money', 'Cash', 'Price']) {
      fits(type(t), 3);
      fits(type(t), 2.5);
      expect(brief(rejects(type(t), '3'))).toEqual([['', 'type', t, 'string']]);
      expect(type(t).text).toBe(t);
    }
    fits(type('Owner'), null);
    fits(type('Owner'), 'me');
    rejects(type('Owner'), 1);
    fits(type('Chain1'), null);
    fits(type('Chain1'), { deep: 'x' });
    expect(brief(rejects(type('Chain1'), { deep: 1 }))).toEqual([['/deep', 'type', 'string', 'number']]);
    expect(brief(rejects(type('Chain1'), 'x'))).toEqual([['', 'type', 'Chain1', 'string']]);
  });

  test('computed record types (fromNode)', () => {
    const t = reg.fromNode({ kind: 'record', fields: [{ name: 'items', type: { kind: 'named', name: 'Findings' }, required: true }, { name: 'n', type: { kind: 'primitive', name: 'integer' }, required: false }] });
    expect(t.text).toBe('{items: Findings, n?: integer}');
    fits(t, { items: [] });
    expect(brief(rejects(t, { items: [{}], n: 'x' }))).toEqual([
      ['/items/0/source', 'required', 'string', 'undefined'],
      ['/items/0/content', 'required', 'string', 'undefined'],
      ['/items/0/confidence', 'required', 'number', 'undefined'],
      ['/n', 'type', 'integer', 'string'],
    ]);
    const e = reg.fromNode({ kind: 'nullable', inner: { kind: 'enum', values: ['a', 1] } });
    fits(e, null);
    fits(e, 1);
    rejects(e, 'b');
  });
});

describe('jsonSchema()', () => {
  const meta = new Ajv2020({ strict: true });

  test.each(['Report', 'Tree', 'Ping', 'Org', 'Weird', 'Cash', 'Chain1', 'Level', 'Finding[]', 'array<string | null>', 'string', 'any', 'integer[][]', 'Owner', 'Mixed'])('%s: valid 2020-12, agrees with check', (t) => {
    const ct = type(t);
    const schema = ct.jsonSchema();
    expect(schema['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(meta.validateSchema(schema), JSON.stringify(meta.errors)).toBe(true);
    const validate = new Ajv2020({ strict: true }).compile(schema);
    const samples = [ct.sample(), null, 1, 'x', [], {}, goodReport(), { name: 'x', children: [] }, [[1]]];
    for (const v of samples) expect(validate(v), `${t} on ${JSON.stringify(v)}`).toBe(ct.check(v));
  });

  test('shape: named types in sorted $defs referenced with $ref; optional fields not required', () => {
    const schema = type('Report').jsonSchema();
    expect(schema).toMatchObject({ $ref: '#/$defs/Report' });
    expect(Object.keys(schema['$defs'] as object)).toEqual(['Cash', 'Finding', 'Level', 'Money', 'Owner', 'Price', 'Report', 'Summary']);
    const defs = schema['$defs'] as Record<string, Record<string, unknown>>;
    expect(defs['Finding']).toEqual({
      type: 'object',
      properties: { source: { type: 'string' }, content: { type: 'string' }, confidence: { type: 'number' }, tags: { type: 'array', items: { type: 'string' } } },
      required: ['source', 'content', 'confidence'],
    });
    expect(defs['Level']).toEqual({ enum: ['low', 'medium', 'high'] });
    expect(defs['Money']).toEqual({ type: 'number' });
    expect(defs['Cash']).toEqual({ $ref: '#/$defs/Money' });
    expect(defs['Owner']).toEqual({ anyOf: [{ type: 'string' }, { type: 'null' }] });
    expect((defs['Report']!['properties'] as Record<string, unknown>)['findings']).toEqual({ type: 'array', items: { $ref: '#/$defs/Finding' } });
    expect((defs['Report']!['properties'] as Record<string, unknown>)['severity']).toEqual({ enum: [1, 2, 3] });
    expect(defs['Report']!['required']).toEqual(['summary', 'findings', 'level', 'owner', 'total', 'reviewer']);
  });

  test('primitives and structural types without names have no $defs', () => {
    expect(type('string').jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' });
    expect(type('any').jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema' });
    expect(type('integer[]').jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', items: { type: 'integer' } });
    expect(type('string | null').jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', anyOf: [{ type: 'string' }, { type: 'null' }] });
    expect(type('any | null').jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema' });
    expect(reg.fromNode({ kind: 'nullable', inner: { kind: 'enum', values: ['a'] } }).jsonSchema()).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', enum: ['a', null] });
    expect(type('Tree').jsonSchema()['$defs']).toEqual({
      Tree: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Tree' } } }, required: ['name', 'children'] },
    });
  });
});

describe('sample()', () => {
  test.each(['Report', 'Tree', 'Ping', 'Pong', 'Org', 'Person', 'Weird', 'Cash', 'Chain1', 'Level', 'Mixed', 'Flags', 'Finding[][]', 'array<string | null>', 'string[] | null', 'any', 'object', 'array', 'null', 'integer', 'boolean'])(
    '%s: a JSON value that fits',
    (t) => {
      const ct = type(t);
      const v = ct.sample();
      expect(isJsonValue(v)).toBe(true);
      expect(JSON.parse(JSON.stringify(v))).toEqual(v);
      fits(ct, v);
    },
  );

  test('a deep, non-recursive chain of records still gets every required field', () => {
    const block: Record<string, unknown> = { N0: { leaf: 'string' } };
    for (let i = 1; i <= 30; i++) block[`N${i}`] = { [`f${i}`]: `N${i - 1}`, opt: { type: 'string', required: false } };
    const t = compiled(block).compile('N30', []).type!;
    fits(t, t.sample());
  });

  test('recursion through optional fields and nullables terminates', () => {
    const r = compiled({ L: { v: 'integer', next: { type: 'L', required: false } }, M: { m: 'M | null', ms: 'M[]', o: { type: 'M', required: false } } });
    for (const n of ['L', 'M']) {
      const t = r.compile(n, []).type!;
      fits(t, t.sample());
    }
  });
});

describe('lookup', () => {
  const ok = (t: CompiledType, path: string[]) => {
    const r = reg.lookup(t, path);
    expect(r.ok, JSON.stringify(r)).toBe(true);
    return (r as { ok: true; type: CompiledType }).type.text;
  };

  test('follows fields, array indices, aliases and nullables', () => {
    const report = type('Report');
    expect(ok(report, [])).toBe('Report');
    expect(ok(report, ['summary'])).toBe('Summary');
    expect(ok(report, ['summary', 'title'])).toBe('string');
    expect(ok(report, ['findings', '0', 'confidence'])).toBe('number');
    expect(ok(report, ['findings', '12', 'tags', '0'])).toBe('string');
    expect(ok(report, ['owner'])).toBe('Owner');
    expect(ok(type('Org'), ['teams', '0', 'members', '1', 'boss', 'boss', 'name'])).toBe('string');
    expect(ok(type('Chain1'), ['deep'])).toBe('string');
    expect(ok(type('Tree'), ['children', '0', 'children', '0', 'name'])).toBe('string');
  });

  test('any, object and array allow any path below them', () => {
    expect(ok(type('any'), ['a', 'b', '0'])).toBe('any');
    expect(ok(type('object'), ['whatever'])).toBe('any');
    expect(ok(type('array'), ['3', 'x'])).toBe('any');
    expect(ok(type('Report'), ['findings', '0', 'extra_is_not_allowed_on_records'].slice(0, 2))).toBe('Finding');
  });

  test('failures say where, why, and how to fix', () => {
    const report = type('Report');
    expect(reg.lookup(report, ['sumary', 'title'])).toEqual({ ok: false, message: '`Report` has no field `sumary`', hint: 'did you mean `summary`?', at: 0 });
    expect(reg.lookup(report, ['summary', 'xyzzy'])).toEqual({ ok: false, message: '`Summary` has no field `xyzzy`', hint: 'fields of `Summary`: `title`, `words`', at: 1 });
    expect(reg.lookup(report, ['summary', 'title', 'length'])).toMatchObject({ ok: false, at: 2, message: 'cannot reach `length` inside `string`, which has no fields' });
    expect(reg.lookup(report, ['findings', 'first'])).toMatchObject({ ok: false, at: 1, message: '`Finding[]` is an array: `first` is not an index' });
    expect(reg.lookup(report, ['level', 'x'])).toMatchObject({ ok: false, at: 1 });
    expect(reg.lookup(type('Chain1'), ['deap'])).toMatchObject({ ok: false, at: 0, hint: 'did you mean `deep`?' });
    expect(reg.lookup(type('Summary'), ['toString'])).toMatchObject({ ok: false, at: 0 });
  });
});

describe('declaration diagnostics', () => {
  const diags = (block: unknown) => compileTypes(block, ['types']).diagnostics;

  test('a clean block has none, `x-` keys are ignored, names keep declaration order', () => {
    expect(compileTypes(TYPES, ['types']).diagnostics).toEqual([]);
    expect(reg.names.slice(0, 4)).toEqual(['Finding', 'Level', 'Money', 'Cash']);
    expect(reg.names).not.toContain('x-ignored');
    expect(compileTypes(undefined, ['types']).diagnostics).toEqual([]);
    expect(compileTypes(null, ['types']).registry.names).toEqual([]);
  });

  test('unknown type names, with did-you-mean and the offset of the name in the string', () => {
    expect(diags({ A: { f: 'Findng' }, Finding: { x: 'string' } })).toEqual([
      expect.objectContaining({ severity: 'error', code: 'unknown-type', path: ['types', 'A', 'f'], message: 'unknown type `Findng`', hint: 'did you mean `Finding`?', data: { offset: 0, length: 6 } }),
    ]);
    expect(diags({ A: { f: 'array<strng>' } })).toEqual([expect.objectContaining({ code: 'unknown-type', path: ['types', 'A', 'f'], hint: 'did you mean `string`?', data: { offset: 6, length: 5 } })]);
    expect(diags({ A: 'Qqqqqqqq[]' })).toEqual([expect.objectContaining({ code: 'unknown-type', path: ['types', 'A'], hint: expect.stringContaining('declare `Qqqqqqqq` under `types:`') as unknown })]);
    expect(diags({ A: { type: 'array', items: 'Nope', nullable: true } })).toEqual([expect.objectContaining({ code: 'unknown-type', path: ['types', 'A', 'items'] })]);
    // in a field position: the path is where the reference sits
    const r = reg.compile({ type: 'Sumary', required: false }, ['workflow', 'p', 'outputs', 's']);
    expect(r.diagnostics).toEqual([expect.objectContaining({ code: 'unknown-type', path: ['workflow', 'p', 'outputs', 's', 'type'], hint: 'did you mean `Summary`?' })]);
    // an unknown name does not cascade: the reference compiles as `any`
    expect(r.type!.check({ anything: 1 })).toBe(true);
  });

  test('alias cycles without a base are recursive-type errors at each member; a tail into a cycle is not', () => {
    expect(diags({ A: 'B', B: 'A' }).map((d) => [d.code, d.path])).toEqual([
      ['recursive-type', ['types', 'A']],
      ['recursive-type', ['types', 'B']],
    ]);
    expect(diags({ S: 'S' }).map((d) => [d.code, d.path])).toEqual([['recursive-type', ['types', 'S']]]);
    expect(diags({ N: 'N | null' }).map((d) => [d.code, d.path])).toEqual([['recursive-type', ['types', 'N']]]);
    expect(diags({ W: { type: 'V', nullable: true }, V: 'W' }).map((d) => [d.code, d.path])).toEqual([
      ['recursive-type', ['types', 'W']],
      ['recursive-type', ['types', 'V']],
    ]);
    expect(diags({ X: 'Y', Y: 'Z', Z: 'Y' }).map((d) => [d.code, d.path])).toEqual([
      ['recursive-type', ['types', 'Y']],
      ['recursive-type', ['types', 'Z']],
    ]);
    expect(diags({ A: 'B', B: 'A' })[0]!.message).toBe('type `A` is an alias of itself (A -> B -> A) and never reaches a concrete type');
    // through a structure, recursion is fine
    expect(diags({ L: 'L[]', T: { kids: 'T[]' }, U: { u: 'U | null' }, P: { q: 'Q[]' }, Q: { p: 'P | null' } })).toEqual([]);
  });

  test('malformed declarations: invalid-type with the path of the offending part; every problem reported', () => {
    const d = diags({
      L: { enum: [] },
      M: { enum: ['a', 'b', 'a'] },
      E: { enum: 'a, b' },
      O: { enum: ['a', null, { x: 1 }] },
      K: { enum: ['a'], color: 'red' },
      N: 42,
      Z: null,
      Arr: ['string'],
      string: 'number',
      list: 'string',
      'bad name': 'string',
      '9lives': 'string',
      G: 'Finding<x>',
      H: 'string | number',
      I: 'string[',
      J: { a: 'string[', b: '', c: 7, d: { type: 'string', items: 'number' } },
      R: { type: 'string', nullable: true, required: false },
    });
    expect(d.map((x) => [x.code, x.path])).toEqual([
      ['invalid-type', ['types', 'string']],
      ['invalid-type', ['types', 'list']],
      ['invalid-type', ['types', 'bad name']],
      ['invalid-type', ['types', '9lives']],
      ['invalid-type', ['types', 'L', 'enum']],
      ['invalid-type', ['types', 'M', 'enum', 2]],
      ['invalid-type', ['types', 'E', 'enum']],
      ['invalid-type', ['types', 'O', 'enum', 1]],
      ['invalid-type', ['types', 'O', 'enum', 2]],
      ['invalid-type', ['types', 'K', 'color']],
      ['invalid-type', ['types', 'N']],
      ['invalid-type', ['types', 'Z']],
      ['invalid-type', ['types', 'Arr']],
      ['invalid-type', ['types', 'G']],
      ['invalid-type', ['types', 'H']],
      ['invalid-type', ['types', 'I']],
      ['invalid-type', ['types', 'J', 'a']],
      ['invalid-type', ['types', 'J', 'b']],
      ['invalid-type', ['types', 'J', 'c']],
      ['invalid-type', ['types', 'J', 'd', 'items']],
      ['invalid-type', ['types', 'R', 'required']],
    ]);
    for (const x of d) {
      expect(x.severity).toBe('error');
      expect(x.message.length).toBeGreaterThan(0);
    }
    expect(d.find((x) => x.path[1] === 'H')!.message).toContain('only `| null` may follow a type');
    expect(d.find((x) => x.path[1] === 'G')!.data).toEqual({ offset: 0 });
    expect(d.find((x) => x.path[1] === 'M')!.message).toBe('duplicate enum value "a"');
  });

  test('the types block itself must be a mapping; wrapper flags must be booleans', () => {
    expect(diags(['Finding']).map((x) => [x.code, x.path])).toEqual([['wrong-type', ['types']]]);
    expect(diags('Finding').map((x) => [x.code, x.path])).toEqual([['wrong-type', ['types']]]);
    expect(reg.compile({ type: 'string', required: 'no' }, ['o']).diagnostics.map((x) => [x.code, x.path])).toEqual([['wrong-type', ['o', 'required']]]);
    expect(reg.compile({ type: 'string', nullable: 'yes' }, ['o']).diagnostics.map((x) => [x.code, x.path])).toEqual([['wrong-type', ['o', 'nullable']]]);
    expect(reg.compile(undefined, ['o']).diagnostics.map((x) => [x.code, x.path])).toEqual([['invalid-type', ['o']]]);
    expect(reg.compile(3, ['o']).diagnostics.map((x) => [x.code, x.path, x.message])).toEqual([['invalid-type', ['o'], 'expected a type, got number 3']]);
    expect(reg.compile('', ['o']).diagnostics.map((x) => [x.code, x.message])).toEqual([['invalid-type', 'malformed type ``: empty type']]);
    expect(reg.compile('', ['o']).type).toBeUndefined();
  });

  test('the expression grammar', () => {
    for (const s of ['string', ' Finding[] ', 'array< string >', 'array<array<Finding>>', 'Finding[][]', 'string | null', 'array<string | null>', 'list<integer>', 'string[] | null']) expect(parseTypeExpr(s).ok, s).toBe(true);
    expect(parseTypeExpr('string | number')).toMatchObject({ ok: false });
    expect(parseTypeExpr('map<string>')).toMatchObject({ ok: false, offset: 0 });
    expect(parseTypeExpr('array<string')).toMatchObject({ ok: false, offset: 12 });
    expect(parseTypeExpr('string[0]')).toMatchObject({ ok: false, offset: 6 });
    expect(parseTypeExpr('a b')).toMatchObject({ ok: false, offset: 2 });
    expect(parseTypeExpr('   ')).toMatchObject({ ok: false, offset: 0 });
    expect(parseTypeExpr('string | null | null')).toMatchObject({ ok: false });
  });
});

describe('check and issues always agree on these edge values', () => {
  const values: unknown[] = [
    ...KINDS.map(([, v]) => v),
    ...NOT_JSON.map(([, v]) => v),
    goodReport(),
    { ...goodReport(), extra: NaN },
    { constructor: 1 },
    {},
    Object.create(null),
    [undefined],
    [[[]]],
    { name: 'x', children: [{ name: 'y', children: [null] }] },
    'low',
    -0,
  ];
  test.each(['Report', 'Tree', 'Weird', 'Level', 'Mixed', 'any', 'object', 'array', 'Finding[]', 'Chain1', 'Owner', 'array<string | null>'])('%s', (t) => {
    const ct = type(t);
    for (const v of values) expect(ct.check(v), `${t} on ${show(v)}`).toBe(ct.issues(v).length === 0);
  });
});
